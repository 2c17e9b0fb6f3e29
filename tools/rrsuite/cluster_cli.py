"""`python3 -m rrsuite cluster COMMAND DIR ...`: scripts/cluster.sh's commands for the plain shape,
and the member commands both shapes share; scripts/cluster.sh is the command line operators and
docs use and calls this (its header says what each command does; the output is the same line for
line: tests/scripts/cluster_cli.golden).

  start DIR [--bin-dir BIN]        the plain shape (the local servers, PgBouncer, the provider,
                                   the APIs, HAProxy, the daemons); export lines on stdout
  stop DIR                         the plain shape's members, then the local servers
  env DIR                          the export lines (either shape)
  status DIR                       a line per member (either shape; cluster.sh adds the rest)
  start-member DIR NAME            a member both shapes share (etcd and Patroni: cluster.sh)
  stop-member DIR NAME [--kill]    any member; an API until HAProxy has it out
  stop-members DIR [--kill] NAME...   several at once (graceful signals, then each bound)
  restart DIR NAME                 stop-member then start-member
  rolling-restart DIR              api1 then api2, each only while the other is UP
  capture-settings DIR, pgbouncer-site DIR, check-pgbouncer DIR, migrate DIR, check-apis DIR
                                   the steps of `start` the HA shape's start (in cluster.sh)
                                   takes too: DIR/app.env from this environment, PgBouncer's
                                   site file and the check of its policy, migrate and the demo
                                   rider's token, both APIs UP and /readyz through HAProxy
  netns-up DIR PREFIX, netns-down DIR
                                   the HA shape's node namespaces (--netns): node_netns.py
  partition DIR nX, heal DIR nX    node nX's link down or up again (--netns)
  kill-postgres DIR nX, postgres-pid DIR N, stop-nodes-postgres DIR, stop-orphan-postgres DIR
                                   the nodes' PostgreSQL as processes: node_postgres.py

Progress goes to stderr as "cluster: ..."; a failure says one line and exits 1."""

import os
import shutil
import signal
import subprocess
import sys
import traceback

from . import haproxy, members, node_netns, node_postgres, pgbouncer, ports
from .clusterdir import HAPROXY_SOURCE, ClusterDir, ClusterError, bash_quote, read_assignments, say
from .paths import LOCAL_SERVERS, REPO
from .process import http_status

CONF_VARIABLES = ["BIN_DIR", "PG_PORT", "REDIS_PORT", "PGBOUNCER_PORT", "HAPROXY_PORT", "HAPROXY_STATS_PORT",
                  "MOCK_PORT", "API1_PORT", "API2_PORT"]
# The daemons' settings taken from the environment of `start` (names as in .env.example).
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
        ("HAPROXY_PORT", c["HAPROXY_PORT"]), ("HAPROXY_STATS_URL", "http://127.0.0.1:%s/stats" % c["HAPROXY_STATS_PORT"]),
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


def check_requirements(bin_dir):
    if not os.path.isdir(bin_dir):
        raise ClusterError("no binaries in %s (build first: scripts/build.sh build)" % bin_dir)
    bin_dir = os.path.abspath(bin_dir)
    for b in ("api", "enqueuer", "completer", "reaper", "stripe-mock"):
        if not os.access(os.path.join(bin_dir, "rocket-rides-" + b), os.X_OK):
            raise ClusterError("%s/rocket-rides-%s missing (build first: scripts/build.sh build)" % (bin_dir, b))
    if not shutil.which("pgbouncer") or not shutil.which("haproxy"):
        raise ClusterError("pgbouncer or haproxy missing (scripts/install-deps.sh installs them)")
    return bin_dir


class _Stopped(BaseException):
    pass


def _raise_stopped(signum, _frame):
    raise _Stopped()


def start(cluster, args):
    bin_dir = os.environ.get("ROCKET_RIDES_BIN") or os.path.join(REPO, "build", "bin")
    ha = False
    while args:
        if args[0] == "--bin-dir":
            if len(args) < 2 or not args[1]:
                raise ClusterError("--bin-dir needs a directory")
            bin_dir, args = args[1], args[2:]
        elif args[0] in ("--async", "--netns"):
            raise ClusterError("--async and --netns go with --ha")
        elif args[0] == "--ha":
            ha, args = True, args[1:]
        else:
            raise ClusterError("unknown option %s" % args[0])
    if ha:
        raise ClusterError("--ha: scripts/cluster.sh starts the HA shape")
    bin_dir = check_requirements(bin_dir)
    if cluster.exists():
        cluster.load()
        if cluster.ha:
            raise ClusterError("%s holds a cluster of the other shape: stop it and use another directory" % cluster.path)
        running = [m for m in cluster.members if cluster.member_pid(m) is not None]
        if len(running) == len(cluster.members):
            say("already running in %s" % cluster.path)
            print("\n".join(export_lines(cluster)), flush=True)
            return
        if running:
            raise ClusterError("partly running in %s (%s): stop it first, or start-member the others" % (
                cluster.path, " ".join(running)))
    os.makedirs(cluster.file("logs"), exist_ok=True)
    os.makedirs(cluster.file("pids"), exist_ok=True)
    if os.getuid() == 0:
        os.chmod(cluster.path, os.stat(cluster.path).st_mode | 0o001)  # postgres reaches servers/, pgbouncer/
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _raise_stopped)
    try:
        start_plain(cluster, bin_dir)
    except BaseException as error:
        if isinstance(error, ClusterError):
            if str(error):
                say(str(error))
        elif not isinstance(error, (_Stopped, KeyboardInterrupt)):
            traceback.print_exc()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        say("start failed: stopping what was started")
        stop(cluster)
        raise ClusterError() from None


def start_plain(cluster, bin_dir):
    say("starting PostgreSQL (durable) and Redis in %s" % cluster.file("servers"))
    if subprocess.run([LOCAL_SERVERS, "start", cluster.file("servers"), "--archive"], stdin=subprocess.DEVNULL,
                      stdout=subprocess.DEVNULL).returncode != 0:
        raise ClusterError()
    cluster.conf = {"BIN_DIR": bin_dir}
    servers = read_assignments(cluster.file("servers", "ports"))
    for name in ("PG_PORT", "REDIS_PORT"):
        cluster.conf[name] = servers[name]
        ports._taken.add(int(servers[name]))
    for name in CONF_VARIABLES[3:]:
        cluster.conf[name] = str(ports.free_port())
    with open(cluster.file("cluster.conf"), "w") as f:
        f.write("".join("%s=%s\n" % (name, bash_quote(cluster.conf[name])) for name in CONF_VARIABLES))
    capture_settings(cluster, os.environ)
    write_pgbouncer_site(cluster)

    say("starting PgBouncer on %s (PostgreSQL on %s)" % (cluster.conf["PGBOUNCER_PORT"], cluster.conf["PG_PORT"]))
    members.start_member(cluster, "pgbouncer")
    check_pgbouncer_policy(cluster)

    migrate(cluster)
    held = psql_value(cluster.port("PG_PORT"), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
    if held != "0":
        say("WARNING: %s advisory lock(s) still held on PostgreSQL after migrate" % held)
    create_demo_user(cluster)
    say("starting the stand-in provider on %s" % cluster.conf["MOCK_PORT"])
    members.start_member(cluster, "stripe-mock")
    say("starting api1 on %s and api2 on %s" % (cluster.conf["API1_PORT"], cluster.conf["API2_PORT"]))
    members.start_member(cluster, "api1")
    members.start_member(cluster, "api2")
    say("starting HAProxy on %s (stats on %s)" % (cluster.conf["HAPROXY_PORT"], cluster.conf["HAPROXY_STATS_PORT"]))
    members.start_member(cluster, "haproxy")
    check_apis_through_haproxy(cluster)
    say("starting enqueuer1, enqueuer2, completer1, completer2, reaper")
    for name in ("enqueuer1", "enqueuer2", "completer1", "completer2", "reaper"):
        members.start_member(cluster, name)
    say("up: API at http://127.0.0.1:%s (logs in %s)" % (cluster.conf["HAPROXY_PORT"], cluster.file("logs")))
    print("\n".join(export_lines(cluster)), flush=True)


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


def check_apis_through_haproxy(cluster):
    """Both APIs in rotation, then one request through HAProxy as a client makes it (both shapes)."""
    members.wait_haproxy_up(cluster, "api1", 20)
    members.wait_haproxy_up(cluster, "api2", 20)
    if not 200 <= http_status(cluster.port("HAPROXY_PORT"), "/readyz", timeout=5) < 400:
        raise ClusterError("GET /readyz through HAProxy failed")


def stop(cluster):
    """The plain shape's members (everything in front of PgBouncer at once: the APIs drain in
    parallel), then PgBouncer, then the local servers. Safe to call twice."""
    if cluster.exists():
        cluster.load()
        if cluster.ha:
            raise ClusterError("stop of the HA shape: scripts/cluster.sh")
        say("stopping the members")
        members.stop_members(cluster, ["haproxy"] + cluster.app_members + ["stripe-mock"])
        members.stop_members(cluster, ["pgbouncer"])
    if os.path.isdir(cluster.file("servers")):
        say("stopping PostgreSQL and Redis")
        subprocess.run([LOCAL_SERVERS, "stop", cluster.file("servers")], stdin=subprocess.DEVNULL,
                       stdout=sys.stderr.fileno())


def rolling_restart(cluster):
    stats = cluster.port("HAPROXY_STATS_PORT")
    for api, other in (("api1", "api2"), ("api2", "api1")):
        # Never take one down while the other is not serving.
        if not haproxy.wait_up(stats, other, 30):
            say("HAProxy does not report %s UP after 30 s (it says: %s)" % (other, haproxy.state(stats, other)))
            raise ClusterError("%s is not UP behind HAProxy: not restarting %s" % (other, api))
        say("rolling restart: stopping %s (SIGTERM: drains, then exits)" % api)
        members.stop_member(cluster, api)
        say("rolling restart: starting %s" % api)
        members.start_member(cluster, api)
    say("rolling restart done")


def member_name(cluster, args):
    name = args[0] if args else ""
    if name not in cluster.members:
        raise ClusterError("unknown member %s (one of: %s)" % (name, " ".join(cluster.members)))
    return name


def run(command, directory, args):
    cluster = ClusterDir(directory)
    if command == "start":
        os.makedirs(cluster.path, exist_ok=True)
        return start(cluster, args)
    if not os.path.isdir(cluster.path):
        if command == "stop":
            return
        raise ClusterError("no cluster in %s" % directory)
    if command == "stop":
        return stop(cluster)
    cluster.load()
    if command == "env":
        print("\n".join(export_lines(cluster)), flush=True)
    elif command == "status":
        print("\n".join(members.status_lines(cluster)), flush=True)
    elif command == "start-member":
        members.start_member(cluster, member_name(cluster, args))
    elif command == "stop-member":
        members.stop_member(cluster, member_name(cluster, args), args[1:2] == ["--kill"])
    elif command == "stop-members":
        kill9 = args[:1] == ["--kill"]
        members.stop_members(cluster, args[1:] if kill9 else args, kill9)
    elif command == "restart":
        name = member_name(cluster, args)
        members.stop_member(cluster, name)
        members.start_member(cluster, name)
    elif command == "rolling-restart":
        rolling_restart(cluster)
    elif command == "check-apis":
        check_apis_through_haproxy(cluster)
    # The steps of the HA shape's start that are the same as the plain shape's.
    elif command == "capture-settings":
        capture_settings(cluster, os.environ)
    elif command == "pgbouncer-site":
        write_pgbouncer_site(cluster)
    elif command == "check-pgbouncer":
        check_pgbouncer_policy(cluster)
    elif command == "migrate":
        migrate(cluster)
        create_demo_user(cluster)
    elif command == "netns-up":
        node_netns.up(cluster, args[0] if args else "")
    elif command == "netns-down":
        node_netns.down(cluster)
    elif command in ("partition", "heal"):
        node_netns.set_link(cluster, args[0] if args else "", "down" if command == "partition" else "up")
    elif command == "kill-postgres":
        node_postgres.kill(cluster, args[0] if args else "")
    elif command == "postgres-pid":
        pid = node_postgres.postmaster_pid(cluster, int(args[0]))
        if pid is None:
            raise ClusterError("")  # none: exit 1, and nothing to say
        print(pid, flush=True)
    elif command == "stop-nodes-postgres":
        node_postgres.stop_all(cluster)
    elif command == "stop-orphan-postgres":
        node_postgres.stop_orphans(cluster)
    else:
        raise ClusterError("unknown command %s" % command)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        run(argv[0], argv[1], argv[2:])
    except ClusterError as error:
        if str(error):
            say(str(error))
        return 1
    return 0
