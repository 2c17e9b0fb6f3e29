"""Starting what the suite runs against, through rrsuite: the binaries, PostgreSQL and Redis, the
provider stand-in, two APIs, two enqueuers and two completers, or scripts/cluster.sh's cluster
(plain or HA) with handles on its members; and the users the clients book rides for."""

import http.client
import json
import os
import time

from rrsuite import cluster, daemons, provider
from rrsuite.ports import free_port

from .base import STRIPE_KEY, HarnessError, is_sanitized, log
from .hostile_wire import AUTH_FAILURES_PER_MINUTE, IDEMPOTENCY_MAX_WAITERS_PER_USER
from .net import http_call
from .patroni import LeaderMonitor


class Stack:
    """The Suite's set-up (a mixin: the state it fills in lives on the Suite)."""

    def binary(self, name, required=True):
        return daemons.binary(self.bin_dir, name, required)

    def base_env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DATABASE_", "REDIS_", "STRIPE_", "COMPLETER_", "ENQUEUER_", "REAPER_",
                                    "IDEMPOTENCY_", "MOCK_", "API_", "PORT", "METRICS_", "LOCAL_SERVERS"))}
        env.update({"DATABASE_URL": self.servers.database_url, "REDIS_URL": self.servers.redis_url,
                    "STRIPE_API_KEY": STRIPE_KEY, "STRIPE_API_BASE": "http://127.0.0.1:%d" % self.mock_port,
                    "STRIPE_TIMEOUT": "1", "IDEMPOTENCY_KEY_LOCK_TIMEOUT": "3",
                    "AUTH_FAILURES_PER_MINUTE": str(AUTH_FAILURES_PER_MINUTE),
                    "IDEMPOTENCY_MAX_WAITERS_PER_USER": str(IDEMPOTENCY_MAX_WAITERS_PER_USER)})
        if self.servers.sentinel:
            env.update({"REDIS_SENTINELS": self.servers.redis_sentinels,
                        "REDIS_SENTINEL_MASTER": self.servers.redis_sentinel_master, "REDIS_MIN_REPLICAS": "1",
                        "ENQUEUER_MAX_BACKOFF": "2"})
        # Sanitizer reports at exit are not this suite's subject; kill -9 leaves none anyway.
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        if "detect_leaks=1" in env["ASAN_OPTIONS"]:
            env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0")
        return env

    def setup_cluster(self):
        """The cluster script starts every member; the suite keeps handles on them."""
        api = self.binary("rocket-rides-api")
        for name in ("rocket-rides-stripe-mock", "rocket-rides-enqueuer", "rocket-rides-completer",
                     "rocket-rides-reaper"):
            self.binary(name)
        if is_sanitized(api):
            self.slow = 2.0
            log("sanitized binaries: timeouts doubled")
        env = {k: v for k, v in os.environ.items() if not k.startswith(cluster.OWNED_PREFIXES)}
        # The same settings the other profiles give their daemons; cluster.sh records them and
        # starts every member again with them.
        env.update({"STRIPE_API_KEY": STRIPE_KEY, "STRIPE_TIMEOUT": "1", "IDEMPOTENCY_KEY_LOCK_TIMEOUT": "3",
                    "AUTH_FAILURES_PER_MINUTE": str(AUTH_FAILURES_PER_MINUTE),
                    "IDEMPOTENCY_MAX_WAITERS_PER_USER": str(IDEMPOTENCY_MAX_WAITERS_PER_USER),
                    "ENQUEUER_IDLE_SLEEP": "1", "ENQUEUER_MAX_BACKOFF": "2", "COMPLETER_MIN_AGE": "2",
                    "COMPLETER_LAST_RUN_THRESHOLD": "1", "COMPLETER_IDLE_SLEEP": "1",
                    "COMPLETER_MAX_BACKOFF": "2", "SHUTDOWN_TIMEOUT": "5", "SHUTDOWN_DRAIN": "2",
                    "MOCK_SEED": str(self.seed % (2 ** 62))})
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        if "detect_leaks=1" in env["ASAN_OPTIONS"]:
            env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0")
        options = []
        if self.ha:
            # Each node's etcd, Patroni and PostgreSQL in a namespace of its own, linked to a bridge
            # in ours (run_in_netns made it; the script refuses the machine's own namespace).
            options = ["--ha", "--netns", self.args.netns_prefix] + (["--async"] if self.args.async_replicas else [])
        log("starting the cluster in %s (%s)" % (self.cluster_dir, " ".join(
            ["scripts/cluster.sh", "start", self.cluster_dir, "--bin-dir", self.bin_dir] + options)))
        self.cluster_started = True
        exports = cluster.start(self.cluster_dir, self.bin_dir, env, options,
                                timeout=(600 if self.ha else 300) * self.slow)
        self.cluster_env = exports
        if self.ha:
            self.servers.slow = self.slow
            self.servers.configure(exports)
            self.provider_key_secret = self.app_setting("PROVIDER_KEY_SECRET")
        else:
            self.servers.adopt(exports["DIRECT_DATABASE_URL"], exports["REDIS_URL"])
        self.mock_port = int(exports["STRIPE_MOCK_PORT"])
        self.front_port = int(exports["HAPROXY_PORT"])
        self.stats_url = exports.get("HAPROXY_STATS_URL")
        if self.ha:
            log("HAProxy on %d (APIs %s, %s), PgBouncer on %s, Patroni nodes %s, Redis on %d, provider keys %s" % (
                self.front_port, exports["API1_ADDRESS"], exports["API2_ADDRESS"], exports.get("PGBOUNCER_PORT"),
                ", ".join("%s=%s:%d" % ((n,) + self.servers.nodes[n]["pg"]) for n in sorted(self.servers.nodes)),
                self.servers.redis_port, "derived (PROVIDER_KEY_SECRET)" if self.provider_key_secret else "random"))
        else:
            log("HAProxy on %d (APIs %s, %s), PgBouncer on %d, PostgreSQL on %d, Redis on %d" % (
                self.front_port, exports["API1_ADDRESS"], exports["API2_ADDRESS"], int(exports["PGBOUNCER_PORT"]),
                self.servers.pg_port, self.servers.redis_port))

        def member(name, port=None):
            return cluster.Member(self.cluster_dir, name, self.slow, port)
        self.mock = member("stripe-mock", self.mock_port)
        self.apis = [member("api%d" % i, int(exports["API%d_ADDRESS" % i].rpartition(":")[2])) for i in (1, 2)]
        self.enqueuers = [member("enqueuer1"), member("enqueuer2")]
        self.completers = [member("completer1"), member("completer2")]
        self.pgbouncer = member("pgbouncer")
        self.haproxy = member("haproxy")

        user_env = dict(env, DATABASE_URL=exports["DATABASE_URL"], DATABASE_PREPARED_STATEMENTS="off")
        if self.ha:
            # Every setting the daemons run with (PROVIDER_KEY_SECRET too), as the script recorded them.
            user_env.update(self.app_settings())
            user_env["DATABASE_URL"] = exports["DATABASE_URL"]
        self.create_users(api, user_env)
        if self.ha:
            leader = self.wait_ha_healthy()
            self.monitor = LeaderMonitor(self.servers)
            self.monitor.start()
            log("Patroni cluster healthy, %s leads: %s" % (leader, self.servers.members()))

    def app_settings(self):
        return cluster.app_settings(self.cluster_dir)

    def app_setting(self, name):
        return self.app_settings().get(name) or None

    def create_users(self, api, env):
        self.users = []
        customers = [("cus_fault_a", False), ("cus_fault_b", False), ("cus_fault_c", False),
                     ("cus_fault_declined", True)]
        for i, (customer, declines) in enumerate(customers):
            email = "fault-%d-%d@example.com" % (i, self.seed % 100000)
            token = daemons.create_user(api, env, email, customer, timeout=60 * self.slow)
            self.users.append((email, customer, token, declines))
        # The hostile client's own user: its keys can never be a good client's.
        email = "fault-hostile-%d@example.com" % (self.seed % 100000)
        token = daemons.create_user(api, env, email, "cus_fault_hostile", timeout=60 * self.slow)
        self.hostile_user = (email, "cus_fault_hostile", token)
        self.user_ids = {row["email"]: row["id"] for row in self.servers.psql_json("SELECT id, email FROM users")}

    def setup(self):
        if self.cluster:
            return self.setup_cluster()
        api = self.binary("rocket-rides-api")
        self.binary("rocket-rides-stripe-mock")
        missing_ok = self.args.allow_missing_daemons
        enqueuer = self.binary("rocket-rides-enqueuer", required=not missing_ok)
        completer = self.binary("rocket-rides-completer", required=not missing_ok)
        if is_sanitized(api):
            self.slow = 2.0
            log("sanitized binaries: timeouts doubled")

        log("starting PostgreSQL and Redis in %s" % self.servers.dir)
        self.servers.start()
        log("PostgreSQL on %d, Redis on %d" % (self.servers.pg_port, self.servers.redis_port))

        self.mock_port = free_port()
        env = self.base_env()
        daemons.migrate(api, env, timeout=120 * self.slow)

        self.mock = provider.start(self.bin_dir, env, self.log_dir, port=self.mock_port, seed=self.seed % (2 ** 62),
                                   timeout=30 * self.slow)

        self.create_users(api, env)

        self.apis = [daemons.start_api(api, dict(env, SHUTDOWN_TIMEOUT="5"), self.log_dir, "api-%d" % (i + 1),
                                       wait=False) for i in range(2)]
        for d in self.apis:
            d.wait_http("/healthz", 30 * self.slow)

        daemon_env = dict(env, ENQUEUER_IDLE_SLEEP="1", ENQUEUER_MAX_BACKOFF="2", COMPLETER_MIN_AGE="2",
                          COMPLETER_LAST_RUN_THRESHOLD="1", COMPLETER_IDLE_SLEEP="1", COMPLETER_MAX_BACKOFF="2",
                          SHUTDOWN_TIMEOUT="5")
        if enqueuer:
            self.enqueuers = [daemons.start_worker(enqueuer, daemon_env, self.log_dir, "enqueuer-%d" % (i + 1))
                              for i in range(2)]
        else:
            log("WARNING: rocket-rides-enqueuer missing: enqueuer faults and invariant 3 are skipped")
        if completer:
            self.completers = [daemons.start_worker(completer, daemon_env, self.log_dir, "completer-%d" % (i + 1))
                               for i in range(2)]
        else:
            log("WARNING: rocket-rides-completer missing: completer faults are skipped")
        daemons.wait_started(self.enqueuers + self.completers)

    def wait_http(self, port, path, daemon, timeout=30.0):
        """After a restart by a fault: the daemon answers GET path again."""
        daemon.wait_http(path, timeout * self.slow, port=port)

    def mock_config(self, **settings):
        body = json.dumps(settings)
        for _ in range(50):
            try:
                status, _, data = http_call(self.mock_port, "POST", "/_mock/config", body,
                                            {"Content-Type": "application/json"}, timeout=5)
                if status == 200:
                    return
                raise HarnessError("mock config %s: %d %s" % (body, status, data[:200]))
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
        raise HarnessError("mock config %s failed" % body)
