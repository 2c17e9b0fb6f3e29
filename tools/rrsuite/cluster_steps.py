"""The steps of a cluster's start that both shapes of scripts/cluster.sh take, in front of
PostgreSQL: the daemons' settings recorded in DIR/app.env, PgBouncer's site file and the check that
its policy is in force, migrate and the demo rider's token, both APIs UP behind HAProxy, and the
export lines `start` and `env` print."""

import os
import subprocess

from . import members, pgbouncer
from .clusterdir import HAPROXY_SOURCE, ClusterError, bash_quote, say
from .process import http_status

SETTING_NAMES = ("DATABASE_POOL_SIZE", "API_WORKERS", "API_IO_THREADS", "SHUTDOWN_TIMEOUT", "TOKEN_CACHE_TTL",
                 "STRIPE_TIMEOUT", "API_FIBERS", "AUTH_FAILURES_PER_MINUTE", "ASAN_OPTIONS", "UBSAN_OPTIONS",
                 "LSAN_OPTIONS", "TZ")
SETTING_PREFIXES = ("RESPONSE_CACHE_", "IDEMPOTENCY_", "API_MAX_", "COMPLETER_", "ENQUEUER_", "RECONCILE_",
                    "REAPER_", "MOCK_")
OWN_SETTINGS = ("DATABASE_URL", "DATABASE_PREPARED_STATEMENTS", "REDIS_URL", "STRIPE_API_BASE", "STRIPE_API_KEY",
                "SHUTDOWN_DRAIN", "LISTEN_DATABASE_URL", "PROVIDER_KEY_SECRET", "API_TRUSTED_PROXIES")


def export_lines(cluster):
    c = cluster.conf
    try:
        with open(cluster.file("token")) as f:
            token = f.read().strip()
    except OSError:
        token = ""
    values = [
        ("API_URL", "http://127.0.0.1:%s" % c["HAPROXY_PORT"]), ("DATABASE_URL", cluster.pooled_url()),
        ("DIRECT_DATABASE_URL", cluster.direct_url()), ("REDIS_URL", "redis://127.0.0.1:%s/0" % c["REDIS_PORT"]),
        ("DATABASE_PREPARED_STATEMENTS", "off"), ("ROCKET_RIDES_TOKEN", token),
        ("API1_ADDRESS", "127.0.0.1:%s" % c["API1_PORT"]), ("API2_ADDRESS", "127.0.0.1:%s" % c["API2_PORT"]),
        ("HAPROXY_PORT", c["HAPROXY_PORT"]),
        ("HAPROXY_STATS_URL", "http://127.0.0.1:%s/stats" % c["HAPROXY_STATS_PORT"]),
        ("HAPROXY_SOURCE_ADDRESS", HAPROXY_SOURCE), ("PGBOUNCER_PORT", c["PGBOUNCER_PORT"]), ("PG_PORT", c["PG_PORT"]),
        ("REDIS_PORT", c["REDIS_PORT"]), ("STRIPE_API_BASE", "http://127.0.0.1:%s" % c["MOCK_PORT"]),
        ("STRIPE_MOCK_PORT", c["MOCK_PORT"]), ("CLUSTER_DIR", cluster.path),
        ("LOCAL_SERVERS_DIR", cluster.file("servers"))]
    return ["export %s=%s" % (name, bash_quote(value)) for name, value in values]


def capture_settings(cluster, environ):
    """DIR/app.env: the daemons' settings from `environ`, with the cluster's defaults; its own
    addresses always win. One K=V a line (env(1) reads them back: no newlines in values)."""
    c = cluster.conf
    lines = [
        "DATABASE_URL=" + cluster.pooled_url(), "DATABASE_PREPARED_STATEMENTS=off",
        "REDIS_URL=redis://127.0.0.1:%s/0" % c["REDIS_PORT"], "STRIPE_API_BASE=http://127.0.0.1:%s" % c["MOCK_PORT"],
        "STRIPE_API_KEY=" + environ.get("STRIPE_API_KEY", "sk_test_rocket_rides_cluster"),
        # At least two health-check intervals (deploy/haproxy.cfg checks every 500 ms, fall 2).
        "SHUTDOWN_DRAIN=" + environ.get("SHUTDOWN_DRAIN", "2"),
        # The provider keys' secret, made once here: every member, and one started again later,
        # has the same.
        "PROVIDER_KEY_SECRET=" + (environ.get("PROVIDER_KEY_SECRET") or os.urandom(32).hex()),
        # Only HAProxy's own address may set the client's with X-Forwarded-For (see cluster.sh).
        "API_TRUSTED_PROXIES=" + (environ.get("API_TRUSTED_PROXIES") or HAPROXY_SOURCE)]
    for name in sorted(environ):
        if name in OWN_SETTINGS or not (name in SETTING_NAMES or name.startswith(SETTING_PREFIXES)):
            continue
        if "\n" in environ[name]:
            raise ClusterError("%s contains a newline" % name)
        lines.append("%s=%s" % (name, environ[name]))
    with open(cluster.file("app.env"), "w") as f:
        f.write("\n".join(lines) + "\n")


def api_command(cluster, *args, log="migrate.log"):
    """rocket-rides-api ARGS with the daemons' settings, its stderr appended to logs/LOG."""
    with open(cluster.file("logs", log), "ab") as err:
        return subprocess.run([cluster.bin("rocket-rides-api")] + list(args), env=cluster.app_env(),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, timeout=600)


def migrate(cluster):
    say("migrating through PgBouncer")
    result = api_command(cluster, "migrate")
    with open(cluster.file("logs", "migrate.log"), "ab") as f:
        f.write(result.stdout)
    if result.returncode != 0:
        cluster.log_tail("migrate")
        raise ClusterError("migrate failed (logs/migrate.log)")


def create_demo_user(cluster):
    """The demo rider's token in DIR/token (a new one for the user a previous start created)."""
    email = "demo@rocketrides.example"
    result = api_command(cluster, "user", "create", "--email", email, "--stripe-customer", "cus_demo")
    if result.returncode != 0:
        result = api_command(cluster, "user", "token", "--email", email)
    with open(cluster.file("token"), "w") as f:
        f.write(result.stdout.decode().strip() + "\n")


def psql_value(port, sql):
    return subprocess.run(["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d",
                           "rocket_rides", "-c", sql], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          timeout=60).stdout.decode().strip()



def write_pgbouncer_site(cluster):
    """The site file: what is this cluster's; the policy is deploy/pgbouncer.ini, included
    unchanged. CLUSTER_PGBOUNCER_OVERRIDES ("key = value" lines) is appended for experiments
    only, e.g. "pool_mode = session" for binaries that cannot yet run unprepared."""
    problem = pgbouncer.write_site(cluster.file("pgbouncer"), cluster.conf["PG_PORT"], cluster.conf["PGBOUNCER_PORT"],
                                   "scripts/cluster.sh for this cluster",
                                   os.environ.get("CLUSTER_PGBOUNCER_OVERRIDES", ""), "CLUSTER_PGBOUNCER_OVERRIDES")
    if problem:
        say(problem)
        raise ClusterError()


def check_pgbouncer_policy(cluster):
    problems = pgbouncer.policy_problems(cluster.port("PGBOUNCER_PORT"),
                                         os.environ.get("CLUSTER_PGBOUNCER_OVERRIDES", ""))
    if problems:
        for line in problems:
            say(line)
        raise ClusterError("PgBouncer does not run the policy of deploy/pgbouncer.ini")


def start_provider_and_apis(cluster):
    """The stand-in provider, then api1 and api2 (each waited for; behind HAProxy once it runs)."""
    say("starting the stand-in provider on %s" % cluster.conf["MOCK_PORT"])
    members.start_member(cluster, "stripe-mock")
    say("starting api1 on %s and api2 on %s" % (cluster.conf["API1_PORT"], cluster.conf["API2_PORT"]))
    members.start_member(cluster, "api1")
    members.start_member(cluster, "api2")


def check_apis_through_haproxy(cluster):
    """Both APIs in rotation, then one request through HAProxy as a client makes it (both shapes)."""
    members.wait_haproxy_up(cluster, "api1", 20)
    members.wait_haproxy_up(cluster, "api2", 20)
    if not 200 <= http_status(cluster.port("HAPROXY_PORT"), "/readyz", timeout=5) < 400:
        raise ClusterError("GET /readyz through HAProxy failed")

