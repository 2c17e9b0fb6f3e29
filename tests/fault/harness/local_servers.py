"""PostgreSQL and Redis (plain, or Redis under Sentinel) in a directory of their own, started and
stopped through rrsuite (scripts/local-servers.sh): stopped and started again for the faults, a
Redis master failed over, and queried for the checker."""

import json
import os
import signal
import time

from rrsuite import redis
from rrsuite.local_servers import LocalServers

from .base import HarnessError, log, run


class Servers(LocalServers):
    """The servers and their faults; the starting and stopping is LocalServers'."""

    def __init__(self, work_dir, fast, adopt=False, sentinel=False):
        # adopt: the servers scripts/cluster.sh started in WORK_DIR/servers (see adopt()).
        LocalServers.__init__(self, os.path.join(work_dir, "servers"), fast, sentinel, log=log)
        if not adopt:
            os.makedirs(self.dir)
        self.pg_up = False
        self.redis_up = False

    def start(self):
        LocalServers.start(self)
        self._read_ports()

    def _read_ports(self):
        """Both servers are up, on the ports scripts/local-servers.sh picked."""
        self.read_ports()
        if self.sentinel:
            # Which server is the master changes with each failover; these two never do.
            self.redis_ports = {self.redis_port: ("redis.pid", self.dir),
                                self.replica_port: ("redis-replica.pid", os.path.join(self.dir, "replica"))}
        self.pg_up = True
        self.redis_up = True

    def adopt(self, database_url, redis_url):
        """Servers started by someone else in self.dir (scripts/cluster.sh); they stop them."""
        self.database_url = database_url
        self.redis_url = redis_url
        self._read_ports()

    def pg_stop(self):
        self.postgres_stop()
        self.pg_up = False

    def pg_start(self):
        self.postgres_start()
        self.pg_up = True

    def psql(self, sql, timeout=60):
        result = run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", self.database_url, "-c", sql],
                     timeout=timeout)
        return result.stdout.decode()

    def psql_json(self, sql):
        out = self.psql("SELECT coalesce(json_agg(t), '[]'::json) FROM (%s) t" % sql).strip()
        return json.loads(out)

    def redis_cli(self, *args, timeout=30, check=True):
        return redis.cli(self.redis_port, *args, timeout=timeout, check=check)

    def redis_stop(self):
        # Stops the server the way an operator's restart would, saving the dataset first: the
        # suite's Redis runs without persistence (--save ''), and a job that reached Redis must
        # still be there when the checker looks.
        redis.shutdown_save(self.redis_port, os.path.join(self.dir, "redis.pid"))
        self.redis_up = False

    def redis_start(self):
        # As scripts/local-servers.sh started it; --dir holds the dump.
        redis.start(self.redis_port, self.dir, os.path.join(self.dir, "redis.pid"), os.path.join(self.dir, "redis.log"))
        self.redis_up = True

    def sentinel_master_port(self):
        """The master port the first sentinel that answers names, or None."""
        for port in self.sentinel_ports:
            out = run(["redis-cli", "-p", str(port), "SENTINEL", "get-master-addr-by-name",
                       self.redis_sentinel_master], timeout=10, check=False).stdout.decode().split()
            if len(out) == 2:
                return int(out[1])
        return None

    def redis_role(self, port):
        out = run(["redis-cli", "-p", str(port), "ROLE"], timeout=10, check=False).stdout.decode().split()
        return out[0] if out else None

    def redis_failover(self, rng):
        """kill -9 of the master; the sentinels promote the replica; the old master is started
        again, empty (no persistence), as a replica of the new one that Sentinel may not promote
        until it holds the new master's data (docs/operations.md: a server without persistence
        comes back so). Started as a master, it was once promoted back, empty, when the sentinels
        took the new master for down one second after its promotion, and its data was lost."""
        old = self.redis_port
        pidfile, directory = self.redis_ports[old]
        with open(os.path.join(self.dir, pidfile)) as f:
            os.kill(int(f.read().strip()), signal.SIGKILL)
        killed = time.time()
        deadline = killed + 60
        while time.time() < deadline:
            new = self.sentinel_master_port()
            if new not in (None, old) and self.redis_role(new) == "master":
                break
            time.sleep(0.1)
        else:
            raise HarnessError("the sentinels did not promote a replica within 60 s of killing %d" % old)
        self.redis_port = new
        log("fault: Redis master %d killed, %d promoted after %.1fs" % (old, new, time.time() - killed))
        # A while with the new master alone: no replica can acknowledge, so pushes wait staged.
        time.sleep(rng.uniform(0.5, 2.0))
        try:
            os.remove(os.path.join(directory, "dump.rdb"))
        except FileNotFoundError:
            pass
        redis.start(old, directory, os.path.join(self.dir, pidfile),
                    os.path.join(self.dir, pidfile.replace(".pid", ".log")), replica_ready=True, replicaof=new,
                    replica_priority=0)
        # Back as a replica with its link up (synced) before anything may fail over to it.
        deadline = time.time() + 60
        while time.time() < deadline:
            info = run(["redis-cli", "-p", str(old), "INFO", "replication"], timeout=10,
                       check=False).stdout.decode()
            if "master_port:%d" % new in info and "master_link_status:up" in info:
                redis.cli(old, "CONFIG", "SET", "replica-priority", "100")
                return
            time.sleep(0.1)
        raise HarnessError("Redis %d did not come back as a replica of %d within 60 s" % (old, new))
