"""PostgreSQL and Redis (plain, or Redis under Sentinel) in a directory of their own, through
scripts/local-servers.sh (which initdb's and starts them): start with retries and a guardian,
the URLs and ports it picked, PostgreSQL stopped and started again alone, stop."""

import os
import time

from .paths import LOCAL_SERVERS
from .process import HarnessError, guard, run


def parse_exports(text):
    """{NAME: value} of the `export NAME=value` lines a script printed."""
    exports = {}
    for line in text.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export "):].partition("=")
            exports[name] = value
    return exports


class LocalServers:
    def __init__(self, directory, fast, sentinel=False, log=print):
        self.dir = directory
        self.fast = fast
        self.sentinel = sentinel
        self.log = log
        self.started = False

    def start(self, attempts=4):
        argv = [LOCAL_SERVERS, "start", self.dir] + (["--fast"] if self.fast else []) + (
            ["--sentinel"] if self.sentinel else [])
        self.started = True
        guard(LOCAL_SERVERS, self.dir, "ports")
        # The script's ports are checked free, then bound: a port taken in between fails the start.
        # Starting again in the same directory picks new ports (and skips initdb).
        for attempt in range(attempts):
            result = run(argv, timeout=180, check=False)
            if result.returncode == 0:
                break
            self.log("local-servers.sh start failed (attempt %d): %s" % (
                attempt + 1, result.stderr.decode(errors="replace").strip().splitlines()[-3:]))
            run([LOCAL_SERVERS, "stop", self.dir], timeout=120, check=False)
            time.sleep(1)
        else:
            raise HarnessError("scripts/local-servers.sh start failed %d times" % attempts)
        self.exports = parse_exports(result.stdout.decode())
        self.database_url = self.exports["DATABASE_URL"]
        self.redis_url = self.exports["REDIS_URL"]
        if self.sentinel:
            self.redis_sentinels = self.exports["REDIS_SENTINELS"]
            self.redis_sentinel_master = self.exports["REDIS_SENTINEL_MASTER"]
        self.read_ports()

    def read_ports(self):
        """The ports scripts/local-servers.sh picked, from its DIR/ports."""
        ports = {}
        with open(os.path.join(self.dir, "ports")) as f:
            for line in f:
                name, _, value = line.strip().partition("=")
                ports[name] = value
        self.pg_port = int(ports["PG_PORT"])
        self.redis_port = int(ports["REDIS_PORT"])
        if "SENTINEL_PORTS" in ports:
            self.replica_port = int(ports["REPLICA_PORT"])
            self.sentinel_ports = [int(p) for p in ports["SENTINEL_PORTS"].strip('"').split()]
        return ports

    def postgres_stop(self):
        run([LOCAL_SERVERS, "postgres-stop", self.dir], timeout=120)

    def postgres_start(self, attempts=3, timeout=60):
        """Same port and options as at start; returns once it takes connections."""
        env = dict(os.environ, PG_START_TIMEOUT=str(timeout))
        for _ in range(attempts):
            result = run([LOCAL_SERVERS, "postgres-start", self.dir], env=env, timeout=timeout + 30, check=False)
            if result.returncode == 0:
                return
            time.sleep(1)
        raise HarnessError("PostgreSQL did not start again in %s: %s" % (
            self.dir, result.stderr.decode(errors="replace")[-2000:]))

    def stop(self):
        if self.started:
            run([LOCAL_SERVERS, "stop", self.dir], timeout=120, check=False)
