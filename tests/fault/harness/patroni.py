"""The Patroni cluster (scripts/cluster.sh start --ha) as the suite sees it: each node's addresses,
which node leads (HAServers: queries go to the leader itself, never through HAProxy or PgBouncer),
and a monitor of the leader over time from which failovers are counted."""

import http.client
import subprocess
import threading
import time
import urllib.parse

from rrsuite import ha_state, redis
from rrsuite.clusterdir import ClusterDir
from rrsuite.patroni import discover_nodes

from .base import HarnessError, log, run
from .local_servers import Servers
from .net import http_get_json


class HAServers(Servers):
    """PostgreSQL as scripts/cluster.sh --ha runs it: three Patroni nodes; the suite's queries go
    straight to the node that leads at that moment (scripts/cluster.sh leader), never through
    HAProxy or PgBouncer, so that the checker reads what the leader itself has. Redis as the
    export lines say."""

    def __init__(self, cluster_dir, slow):
        Servers.__init__(self, cluster_dir, False, adopt=True)
        self.cluster_dir = cluster_dir
        self.slow = slow
        self.nodes = {}  # n1 -> {"rest": (host, port), "pg": (host, port)}
        self.pinned = None  # the node every query goes to (the final leader, while checking)
        self.exports = {}
        self.cluster = None  # settings(), read at its first call

    def configure(self, exports):
        self.exports = exports
        self.redis_url = exports["REDIS_URL"]
        parsed = urllib.parse.urlparse(self.redis_url)
        self.redis_host = parsed.hostname or "127.0.0.1"
        self.redis_port = parsed.port or 6379
        self.database_url = exports.get("DIRECT_DATABASE_URL") or exports["DATABASE_URL"]
        self.pg_up = True
        self.redis_up = True
        self.discover()

    def discover(self):
        """Each node's addresses, from its Patroni file under the cluster's directory."""
        self.nodes = discover_nodes(self.cluster_dir)
        if not self.nodes:
            raise HarnessError("no Patroni node files (restapi and postgresql connect_address) under %s"
                               % self.cluster_dir)

    def leader(self):
        """The leading node as scripts/cluster.sh leader names it (the holder of etcd's leader key),
        or None. Asked in this process: the monitor asks twice a second, and a cluster.sh process
        (bash, then an interpreter importing rrsuite) cost about 0.2 CPU-seconds a call, 47 of
        ha-short's CPU-seconds."""
        name = ha_state.leader_name(self.settings())
        return name if name in self.nodes else None

    def settings(self):
        """The cluster's settings as rrsuite reads them from its directory (nodes, ports, etcd
        members), read once: they do not change while the suite runs."""
        if self.cluster is None:
            self.cluster = ClusterDir(self.cluster_dir).load()
        return self.cluster

    def members(self):
        """Patroni's view ({name: (role, state)}) from the first node whose REST API answers
        GET /cluster with a leader in it (a node cut off answers nothing we can reach)."""
        best = None
        for node in sorted(self.nodes):
            host, port = self.nodes[node]["rest"]
            try:
                status, data = http_get_json(host, port, "/cluster", timeout=1.5)
            except (OSError, http.client.HTTPException, ValueError):
                continue
            if status != 200 or not isinstance(data, dict):
                continue
            view = {m.get("name"): (m.get("role"), m.get("state")) for m in data.get("members", [])}
            if any(role == "leader" for role, _ in view.values()):
                return view
            best = best or view
        return best or {}

    def url_of(self, node):
        host, port = self.nodes[node]["pg"]
        return "postgresql://postgres@%s:%d/rocket_rides?connect_timeout=5" % (host, port)

    def pin(self, timeout=60.0):
        """Every query from here on goes to the node leading now, which must be no standby."""
        deadline = time.time() + timeout * self.slow
        while time.time() < deadline:
            node = self.leader()
            if node is not None:
                self.pinned = node
                try:
                    if self.psql("SELECT pg_is_in_recovery()", timeout=20).strip() == "f":
                        return node
                except (HarnessError, subprocess.TimeoutExpired):
                    pass
                self.pinned = None
            time.sleep(0.5)
        raise HarnessError("no leader accepting writes within %.0fs" % (timeout * self.slow))

    def psql_node(self, node, sql, timeout=60):
        result = run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", self.url_of(node), "-c", sql],
                     timeout=timeout)
        return result.stdout.decode()

    def psql(self, sql, timeout=60):
        node = self.pinned or self.leader()
        url = self.url_of(node) if node else self.database_url
        result = run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", url, "-c", sql], timeout=timeout)
        return result.stdout.decode()

    def redis_cli(self, *args, timeout=30, check=True):
        return redis.cli(self.redis_port, *args, host=self.redis_host, timeout=timeout, check=check)

    def stop(self):
        pass  # scripts/cluster.sh stop


class LeaderMonitor:
    """Asks etcd for the leader (as scripts/cluster.sh leader does) twice a second while the
    traffic runs: the timeline of leaders (None while there is none, or none answers) from which
    failovers are counted."""

    def __init__(self, servers, interval=0.5):
        self.servers = servers
        self.interval = interval
        self.timeline = []  # (time, leader or None), one entry per change
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = None

    def start(self):
        self.note(self.servers.leader())
        self.thread = threading.Thread(target=self._run, name="leader-monitor", daemon=True)
        self.thread.start()

    def stop(self):
        self.done.set()
        if self.thread is not None:
            self.thread.join(30)

    def note(self, leader):
        with self.lock:
            if not self.timeline or self.timeline[-1][1] != leader:
                self.timeline.append((time.time(), leader))
                log("leader: %s" % (leader or "none"))

    def _run(self):
        while not self.done.is_set():
            try:
                self.note(self.servers.leader())
            except Exception as e:  # a monitor that stops would undercount, never overcount
                log("leader monitor: %s" % e)
            self.done.wait(self.interval)

    def changes(self):
        """(time, old, new) for every change of leader from one node to another (a gap with
        no leader between them does not count twice; the same leader back after a gap is none)."""
        with self.lock:
            timeline = list(self.timeline)
        out = []
        last = None
        for t, leader in timeline:
            if leader is None:
                continue
            if last is not None and leader != last:
                out.append((t, last, leader))
            last = leader
        return out

    def current(self):
        with self.lock:
            return self.timeline[-1][1] if self.timeline else None
