"""The API benches' servers (bench/api_bench.sh, bench/in_flight_bench.sh), each started through
tools/rrsuite on a free loopback port and stopped when the run ends however it ends (an error,
SIGINT, SIGTERM): durable PostgreSQL with pg_stat_statements and Redis (LocalServers), the API's
database and pgbench's own, migrated, each with a user; the article's schema in a third; the
stand-in provider; the APIs; PgBouncer running deploy/pgbouncer.ini; HAProxy running
deploy/haproxy.cfg; nginx answering with the API's replay bytes.

Bench holds what the parts share (the work directory, the URLs, the token, the processes whose
CPU the rows show, the figures the verdicts read), as bench/lib's bash kept it in variables."""

import contextlib
import os
import socket
import subprocess
import time

from .base import ARTICLE_SCHEMA, LUA_DIR, BenchError, Workdir, psql, psql_value, read, run_to_file, say, warn
from rrsuite import daemons, haproxy, pgbouncer, provider
from rrsuite.local_servers import LocalServers
from rrsuite.paths import REPO
from rrsuite.ports import free_port
from rrsuite.postgres import as_postgres, with_database
from rrsuite.process import Process, print_tail

# The body of every POST /rides here (bench/api_bench/common.lua sends the same).
REQUEST_BODY = '{"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712}'
PG_EXTRA_OPTS = ("-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=on "
                 "-c pg_stat_statements.max=10000")


def wait_port(port, process=None, seconds=10):
    """Until something listens on 127.0.0.1:port (and `process`, if given, still runs)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and not process.alive():
            break
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


class Bench:
    def __init__(self, name, bin_dir, duration, stats_settle):
        self.name = name
        self.bin = bin_dir
        self.api_binary = daemons.binary(bin_dir, "rocket-rides-api")
        self.duration = duration
        self.stats_settle = stats_settle
        self.stack = contextlib.ExitStack()
        self.dir = None
        self.apis = []        # whose CPU the "api" column shows
        self.proxies = []     # PgBouncer and HAProxy once started
        self.figures = {}     # what the verdicts read besides the rows
        self.replay_key = ""
        self.article_ok = self.minimum_ok = False

    def __enter__(self):
        self.stack.__enter__()
        self.dir = self.stack.enter_context(Workdir("rocket-rides-apibench", keep_logs_on_failure=self.name))
        return self

    def __exit__(self, *exc):
        return self.stack.__exit__(*exc)

    def file(self, *names):
        return self.dir.file(*names)

    def sql(self, text, **kw):
        return psql(self.database_url, text, **kw)

    def sql_value(self, text, **kw):
        return psql_value(self.database_url, text, **kw)

    def started(self, process):
        """Registers a process to stop at the end (the last started stops first)."""
        self.stack.callback(process.stop)
        return process

    # --- PostgreSQL, Redis, the databases, the stand-in, the API straight to PostgreSQL
    def start_servers(self):
        say("starting durable PostgreSQL (pg_stat_statements) and Redis...")
        os.environ["PG_EXTRA_OPTS"] = PG_EXTRA_OPTS  # scripts/local-servers.sh reads it
        servers = LocalServers(self.file("servers"), fast=False, log=warn)
        self.stack.callback(servers.stop)
        servers.start()
        del os.environ["PG_EXTRA_OPTS"]
        self.servers = servers
        self.env = dict(os.environ, **servers.exports)
        self.database_url = servers.database_url
        self.pgbench_url = with_database(self.database_url, "rocket_rides_pgbench")
        self.sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        self.sql("CREATE DATABASE rocket_rides_pgbench")

        log = self.file("migrate.log")
        pgbench_env = dict(self.env, DATABASE_URL=self.pgbench_url)
        for env in (self.env, pgbench_env):
            run_to_file([self.api_binary, "migrate"], log, env=env, append=True)
        self.token = daemons.create_user(self.api_binary, self.env, "bench@rocketrides.example", "cus_bench")
        daemons.create_user(self.api_binary, pgbench_env, "pgbench@rocketrides.example", "cus_bench")
        self.pgbench_user = psql_value(self.pgbench_url,
                                       "SELECT id FROM users WHERE email = 'pgbench@rocketrides.example'")

        # The article's floor: the seed article's schema (bench/article_schema.sql, a verbatim
        # copy) in a database of its own. Loading it may fail without ending the bench (those rows
        # are then left out and their verdicts read "not measured").
        self.article_url = with_database(self.database_url, "article")
        self.article_ok = self.load_article(create=True)
        if not self.article_ok:
            warn("%s: bench/article_schema.sql could not be loaded; the article minimum SQL rows are left out:"
                 % self.name)
            print_tail(self.file("article-schema.log"), 5)

        # The stand-in provider with no injected failures, drops or latency.
        self.mock = self.started(provider.start(self.bin, dict(self.env, STRIPE_API_KEY="sk_bench",
                                                               MOCK_FAILURE_RATE="0", MOCK_DROP_RATE="0",
                                                               MOCK_LATENCY_MS="0"), self.dir.path, name="mock"))
        self.api = self.start_api("api")
        self.api_url = "http://127.0.0.1:%d" % self.api.port

    def load_article(self, create=False, drop=False):
        """The article's database loaded from bench/article_schema.sql (dropped first if drop);
        whether it loaded (psql's messages in article-schema.log)."""
        statements = ((["DROP DATABASE article"] if drop else [])
                      + (["CREATE DATABASE article"] if create or drop else []))
        with open(self.file("article-schema.log"), "ab") as log:
            for statement in statements:
                if subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", self.database_url, "-c",
                                   "/* api_bench */ " + statement], stdout=log, stderr=subprocess.STDOUT).returncode:
                    return False
            return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", self.article_url, "-f", ARTICLE_SCHEMA],
                                  stdout=log, stderr=subprocess.STDOUT).returncode == 0

    def start_api(self, name, **settings):
        """An API logging to NAME.log, with these settings over the environment, ready once /healthz
        answers; its CPU counts in the "api" column. wrk sends all its connections (up to 512) with
        one user's token, which API_MAX_IN_FLIGHT_PER_USER (8 by default) would refuse with 429:
        this measures throughput, not the per-user limit."""
        env = dict(self.env, STRIPE_API_BASE=provider.base_url(self.mock), STRIPE_API_KEY="sk_bench",
                   API_MAX_IN_FLIGHT_PER_USER="1024", **settings)
        process = self.started(daemons.start_api(self.api_binary, env, self.dir.path, name=name, header=""))
        self.apis.append(process)
        return process

    def postmaster_pid(self):
        return int(read(self.file("servers", "pg", "postmaster.pid")).split("\n", 1)[0])

    # --- requests as the wrk scripts send them
    def post_rides(self, base_url, key, prefix):
        """POST /rides with the replay body; its status (curl keeps the answer's header bytes in
        PREFIX.headers and its body in PREFIX.body, as nginx_same_answer.py reads them)."""
        result = subprocess.run(["curl", "-s", "-D", prefix + ".headers", "-o", prefix + ".body", "-w", "%{http_code}",
                                 "-X", "POST", base_url + "/rides", "-H", "Authorization: Bearer " + self.token,
                                 "-H", "Idempotency-Key: " + key, "-H", "Content-Type: application/json",
                                 "-d", REQUEST_BODY], stdout=subprocess.PIPE, timeout=60)
        return result.stdout.decode().strip()

    def warm_up(self, url):
        """An API's connections, prepared statements and token cache, warmed outside the measured runs."""
        env = dict(os.environ, BENCH_TOKEN=self.token, BENCH_RUN="warmup-%s" % os.urandom(4).hex())
        run_to_file(["wrk", "-t2", "-c32", "-d3s", "-s", os.path.join(LUA_DIR, "new_keys.lua"), url],
                    self.file("warmup.out"), env=env, append=True)

    # --- nginx answering POST /rides with the bytes of the API's replay answer
    def nginx_start(self):
        """nginx on a port of its own answering as the API replays, or None, having said why."""
        status = self.post_rides(self.api_url, self.replay_key, self.file("replay-answer"))
        if status != "201":
            warn("  %s: the replay answered %s" % (self.name, status))
            return None
        port = free_port()
        if subprocess.run(["python3", os.path.join(LUA_DIR, "nginx_same_answer.py"), self.file("replay-answer.headers"),
                           self.file("replay-answer.body"), str(port), self.file("nginx")]).returncode != 0:
            return None
        argv = ["nginx", "-p", self.file("nginx") + "/", "-c", self.file("nginx", "nginx.conf"), "-e",
                self.file("nginx", "error.log"), "-g", "daemon off;"]
        nginx = self.started(Process("nginx", argv, dict(os.environ), self.dir.path, port=port, header="").start())
        if not wait_port(port, nginx):
            warn(read(nginx.log_path) + read(self.file("nginx", "error.log")))
            return None
        status = self.post_rides("http://127.0.0.1:%d" % port, self.replay_key, self.file("nginx-answer"))
        if status != "201" or read(self.file("replay-answer.body")) != read(self.file("nginx-answer.body")):
            warn("  %s: nginx answers %s with a body other than the API's" % (self.name, status))
            return None

        def header_names(path):
            lines = read(path).replace("\r", "").splitlines()[1:]
            return ", ".join(line.split(":", 1)[0] for line in lines if ":" in line)
        say("nginx (port %d) answers POST /rides as the API replays: 201, the same %d-byte body; headers API: %s; "
            "nginx: %s" % (port, os.path.getsize(self.file("replay-answer.body")),
                           header_names(self.file("replay-answer.headers")),
                           header_names(self.file("nginx-answer.headers"))))
        return nginx

    # --- PgBouncer running deploy/pgbouncer.ini and two APIs through it without prepared
    # statements (the production topology)
    def start_pgbouncer(self):
        self.pgbouncer_port = free_port()
        say("\nstarting PgBouncer (deploy/pgbouncer.ini) and two APIs through it (DATABASE_PREPARED_STATEMENTS=off)...")
        directory = self.file("pgbouncer")
        problem = pgbouncer.write_site(directory, self.servers.pg_port, self.pgbouncer_port,
                                       "bench/api_bench.sh for this run")
        if problem:
            raise BenchError("PgBouncer: " + problem)
        process = self.started(Process("pgbouncer", as_postgres(pgbouncer.argv(directory)), dict(os.environ),
                                       self.dir.path, port=self.pgbouncer_port, header="").start())
        try:
            pgbouncer.wait_ready(process, self.pgbouncer_port)
        except Exception:
            warn("%s: PgBouncer:" % self.name)
            print_tail(process.log_path)
            raise
        problems = pgbouncer.policy_problems(self.pgbouncer_port)
        if problems:
            raise BenchError("PgBouncer does not run deploy/pgbouncer.ini: " + "; ".join(problems))
        self.pgbouncer = process
        self.proxies.append(process)
        self.pooled_url = "postgresql://postgres@127.0.0.1:%d/rocket_rides" % self.pgbouncer_port
        shown = pgbouncer.show_config(self.pgbouncer_port) or {}
        self.pool_size = int(shown.get("default_pool_size") or 0)
        self.reserve_pool_size = int(shown.get("reserve_pool_size") or 0)
        self.max_db_connections = int(shown.get("max_db_connections") or 0)
        self.pooled_apis = [self.start_api("api-pgbouncer%d" % i, DATABASE_URL=self.pooled_url,
                                           DATABASE_PREPARED_STATEMENTS="off") for i in (1, 2)]
        for api in self.pooled_apis:
            self.warm_up("http://127.0.0.1:%d" % api.port)
        self.pgb_url = "http://127.0.0.1:%d" % self.pooled_apis[0].port

    # --- HAProxy running deploy/haproxy.cfg in front of the two APIs through PgBouncer
    def start_haproxy(self):
        self.haproxy_port, self.haproxy_stats_port = free_port(), free_port()
        say("starting HAProxy (deploy/haproxy.cfg) in front of the two APIs through PgBouncer...")
        env = dict(os.environ, **haproxy.env(self.haproxy_port, self.haproxy_stats_port,
                                             [api.port for api in self.pooled_apis]))
        process = self.started(Process("haproxy", haproxy.argv(), env, self.dir.path, port=self.haproxy_stats_port,
                                       header="").start())
        try:
            process.wait_http(haproxy.HEALTH_PATH, 10)
        except Exception:
            warn("%s: HAProxy:" % self.name)
            print_tail(process.log_path)
            raise
        self.haproxy = process
        self.proxies.append(process)
        deadline = time.monotonic() + 10
        while not all(haproxy.state(self.haproxy_stats_port, s) == "UP" for s in ("api1", "api2")):
            if not process.alive():
                print_tail(process.log_path)
                raise BenchError("HAProxy exited (its log above)")
            if time.monotonic() > deadline:
                raise BenchError("HAProxy does not report both APIs UP after 10 s")
            time.sleep(0.1)


def repo_relative(path):
    return os.path.relpath(path, REPO)
