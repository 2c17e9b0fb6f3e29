"""PostgreSQL and Redis (plain, or Redis under Sentinel) in a directory of their own, through
scripts/local-servers.sh: start, stop and restart them for the faults, query them for the checker."""

import json
import os
import signal
import subprocess
import time

from .base import LOCAL_SERVERS, HarnessError, log, run


class Servers:
    def __init__(self, work_dir, fast, adopt=False, sentinel=False):
        # adopt: the servers scripts/cluster.sh started in WORK_DIR/servers (see adopt()).
        self.dir = os.path.join(work_dir, "servers")
        if not adopt:
            os.makedirs(self.dir)
        self.fast = fast
        self.sentinel = sentinel
        self.started = False
        self.pg_up = False
        self.redis_up = False
        self.pgbin = sorted((d for d in os.listdir("/usr/lib/postgresql")), key=lambda v: [int(x) for x in v.split(".") if x.isdigit()])
        self.pgbin = os.path.join("/usr/lib/postgresql", self.pgbin[-1], "bin") if self.pgbin else None
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def start(self):
        argv = [LOCAL_SERVERS, "start", self.dir] + (["--fast"] if self.fast else []) + (
            ["--sentinel"] if self.sentinel else [])
        self.started = True
        # A guardian outside our process tree: if this harness is killed outright, it stops the
        # servers (the daemons die with us through PR_SET_PDEATHSIG).
        # setsid -f forks, so the guardian is nobody's child: CTest's kill of a timed-out test's
        # process tree does not reach it. It does nothing once the directory is gone.
        subprocess.run(
            ["setsid", "-f", "sh", "-c",
             'while kill -0 "$1" 2>/dev/null; do sleep 1; done; '
             '[ -f "$3/ports" ] && "$2" stop "$3" >/dev/null 2>&1; exit 0',
             "guardian", str(os.getpid()), LOCAL_SERVERS, self.dir],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        # The script picks ports in 20000-49999, which overlaps the kernel's ephemeral range: a
        # port that looked free can be taken by an outgoing connection before PostgreSQL binds it.
        # Starting again in the same directory picks new ports (and skips initdb).
        for attempt in range(4):
            result = run(argv, timeout=180, check=False)
            if result.returncode == 0:
                break
            log("local-servers.sh start failed (attempt %d): %s" % (
                attempt + 1, result.stderr.decode(errors="replace").strip().splitlines()[-3:]))
            run([LOCAL_SERVERS, "stop", self.dir], timeout=120, check=False)
            time.sleep(1)
        else:
            raise HarnessError("scripts/local-servers.sh start failed 4 times")
        out = result.stdout.decode()
        env = {}
        for line in out.splitlines():
            if line.startswith("export "):
                name, _, value = line[len("export "):].partition("=")
                env[name] = value
        self.database_url = env["DATABASE_URL"]
        self.redis_url = env["REDIS_URL"]
        if self.sentinel:
            self.redis_sentinels = env["REDIS_SENTINELS"]
            self.redis_sentinel_master = env["REDIS_SENTINEL_MASTER"]
        self._read_ports()

    def _read_ports(self):
        """The ports scripts/local-servers.sh picked, from its DIR/ports; both servers are up."""
        ports = {}
        with open(os.path.join(self.dir, "ports")) as f:
            for line in f:
                name, _, value = line.strip().partition("=")
                ports[name] = value
        self.pg_port = int(ports["PG_PORT"])
        self.redis_port = int(ports["REDIS_PORT"])
        if self.sentinel:
            # Which server is the master changes with each failover; these two never do.
            self.redis_ports = {int(ports["REDIS_PORT"]): ("redis.pid", self.dir),
                                int(ports["REPLICA_PORT"]): ("redis-replica.pid", os.path.join(self.dir, "replica"))}
            self.sentinel_ports = [int(p) for p in ports["SENTINEL_PORTS"].strip('"').split()]
        self.pg_up = True
        self.redis_up = True

    def adopt(self, database_url, redis_url):
        """Servers started by someone else in self.dir (scripts/cluster.sh); they stop them."""
        self.database_url = database_url
        self.redis_url = redis_url
        self._read_ports()

    # The same options scripts/local-servers.sh starts PostgreSQL with.
    def pg_options(self):
        opts = "-p %d -k %s/pg -c listen_addresses=127.0.0.1 -c max_connections=300" % (self.pg_port, self.dir)
        if self.fast:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        return opts

    def pg_stop(self):
        run(self.as_pg + [os.path.join(self.pgbin, "pg_ctl"), "-w", "-t", "60", "-D", os.path.join(self.dir, "pg"),
                          "-m", "fast", "stop"], timeout=90)
        self.pg_up = False

    def pg_start(self):
        for attempt in range(3):
            result = run(self.as_pg + [os.path.join(self.pgbin, "pg_ctl"), "-w", "-t", "60", "-D",
                                       os.path.join(self.dir, "pg"), "-l", os.path.join(self.dir, "pg", "server.log"),
                                       "-o", self.pg_options(), "start"], timeout=90, check=False)
            if result.returncode == 0:
                self.pg_up = True
                return
            time.sleep(1)
        raise HarnessError("PostgreSQL did not start again: %s" % result.stderr.decode(errors="replace"))

    def psql(self, sql, timeout=60):
        result = run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", self.database_url, "-c", sql],
                     timeout=timeout)
        return result.stdout.decode()

    def psql_json(self, sql):
        out = self.psql("SELECT coalesce(json_agg(t), '[]'::json) FROM (%s) t" % sql).strip()
        return json.loads(out)

    def redis_cli(self, *args, timeout=30, check=True):
        return run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.redis_port)] + list(args), timeout=timeout,
                   check=check)

    def redis_stop(self):
        # Stops the server the way an operator's restart would, saving the dataset first: the
        # suite's Redis runs without persistence (--save ''), and a job that reached Redis must
        # still be there when the checker looks.
        self.redis_cli("SHUTDOWN", "SAVE", check=False)
        pidfile = os.path.join(self.dir, "redis.pid")
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                with open(pidfile) as f:
                    pid = int(f.read().strip())
                os.kill(pid, 0)
            except (OSError, ValueError):
                break
            time.sleep(0.05)
        self.redis_up = False

    def redis_start(self):
        # The same arguments scripts/local-servers.sh starts Redis with; --dir holds the dump.
        run(["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "yes", "--pidfile", os.path.join(self.dir, "redis.pid"),
             "--logfile", os.path.join(self.dir, "redis.log"), "--dir", self.dir], timeout=30)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.redis_cli("PING", check=False).returncode == 0:
                self.redis_up = True
                return
            time.sleep(0.05)
        raise HarnessError("Redis did not start again on port %d" % self.redis_port)

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
        again, empty (no persistence), and the sentinels make it a replica of the new one."""
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
        run(["redis-server", "--port", str(old), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "yes", "--repl-diskless-sync-delay", "0", "--pidfile", os.path.join(self.dir, pidfile),
             "--logfile", os.path.join(self.dir, pidfile.replace(".pid", ".log")), "--dir", directory], timeout=30)
        # Back as a replica with its link up before anything else may fail over to it.
        deadline = time.time() + 60
        while time.time() < deadline:
            info = run(["redis-cli", "-p", str(old), "INFO", "replication"], timeout=10,
                       check=False).stdout.decode()
            if "master_port:%d" % new in info and "master_link_status:up" in info:
                return
            time.sleep(0.1)
        raise HarnessError("Redis %d did not come back as a replica of %d within 60 s" % (old, new))

    def stop(self):
        if self.started:
            run([LOCAL_SERVERS, "stop", self.dir], timeout=120, check=False)
