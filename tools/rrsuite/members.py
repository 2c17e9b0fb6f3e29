"""The members of scripts/cluster.sh's cluster (PgBouncer, HAProxy, the stand-in provider,
api1/api2, the enqueuers, the completers, the reapers; in the HA shape also etcd1..3 and
patroni1..3): how each one starts (its command line, the user it runs as, its exact environment,
the network namespace of its node with --netns, its readiness), and how any member stops (its
graceful signal, a bound, then kill -9). Each starts detached, in a session of its own, so that it
outlives the command line that started it; its pid file in DIR/pids/ is how the next command
finds it."""

import os
import signal
import time

from . import daemons, haproxy, pgbouncer, provider
from .clusterdir import HAPROXY_SOURCE, ClusterError, pid_running, say
from .paths import REPO
from .process import HarnessError, Process, http_status

# Seconds a member gets after its graceful signal before kill -9, beyond its settings.
FIXED_BOUNDS = {"haproxy": 35,   # hard-stop-after 30s in deploy/haproxy.cfg
                "pgbouncer": 15,
                "patroni": 40}   # a leader demotes, then PostgreSQL's fast shutdown and a checkpoint
SIGNALS = {"pgbouncer": signal.SIGINT,  # safe shutdown: waits for transactions in progress
           "haproxy": signal.SIGUSR1}   # soft stop: stops listening, finishes requests in progress
BINARIES = {"api": "rocket-rides-api", "enqueuer": "rocket-rides-enqueuer", "completer": "rocket-rides-completer",
            "reaper": "rocket-rides-reaper", "stripe-mock": "rocket-rides-stripe-mock"}


def kind(name):
    """api1 -> api, reaper2 -> reaper, stripe-mock -> stripe-mock."""
    return name.rstrip("0123456789")


def header(name):
    return "==== %s started %s ====" % (name, time.strftime("%Y-%m-%d %H:%M:%S"))


def as_user(argv, user):
    """argv run as `user` when we are root. setpriv execs in place: the pid stays the server's."""
    if user and os.getuid() == 0:
        return ["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups"] + list(argv)
    return list(argv)


def node_netns(cluster, n):
    """The pid of node n's namespace holder (--netns: a process cluster.sh leaves in it), through
    which a member enters that namespace; None without --netns."""
    if not cluster.conf.get("NETNS_PREFIX"):
        return None
    holder = cluster.member_pid("netns-n%d" % n)
    if holder is None:
        raise ClusterError("the holder of node n%d's network namespace is gone (stop and start the cluster)" % n)
    return holder


def launch(cluster, name, argv, env, user=None, netns=None):
    """Starts argv as `user` (when we are root) with exactly `env`, detached, its output appended
    to DIR/logs/NAME.log, inside the network namespace of holder pid `netns` if given (nsenter
    execs in place, as setpriv does: the pid is the member's); records its pid."""
    argv = as_user(argv, user)
    if netns:
        argv = ["nsenter", "--net=/proc/%d/ns/net" % netns, "--"] + argv
    process = Process(name, argv, env, cluster.file("logs"), detached=True, header=header(name)).start()
    cluster.record_pid(name, process.proc.pid)
    return process


def _exited(cluster, name):
    say("%s exited at start; the end of logs/%s.log:" % (name, name))
    cluster.log_tail(name)
    return ClusterError()  # said already


def _not_ready(cluster, name, error):
    """A readiness wait's HarnessError as the command line says it: its first clause, then the end
    of the member's log."""
    say("%s; the end of logs/%s.log:" % (str(error).split(";")[0].split(" (log:")[0], name))
    cluster.log_tail(name)
    return ClusterError()  # said already


def wait_http(cluster, name, process, port, path, seconds):
    """Until GET path on port answers 2xx or 3xx; fails at once if the member has exited."""
    try:
        process.wait_ready(lambda: 200 <= http_status(port, path) < 400, "answer GET %s on port %d" % (path, port),
                           seconds, interval=0.1)
    except HarnessError as error:
        raise _not_ready(cluster, name, error) from None


def wait_alive(cluster, name, process):
    """For the daemons without a port: still running after a moment (a bad setting exits at once)."""
    time.sleep(0.3)
    if not process.alive():
        raise _exited(cluster, name)


def start_pgbouncer(cluster):
    directory = cluster.file("pgbouncer")
    process = launch(cluster, "pgbouncer", pgbouncer.argv(directory), cluster.base_env(pgbouncer.HOME),
                     user=pgbouncer.USER)
    try:
        pgbouncer.wait_ready(process, cluster.port("PGBOUNCER_PORT"))
    except HarnessError as error:
        raise _not_ready(cluster, "pgbouncer", error) from None


def start_haproxy(cluster):
    postgres = None
    if cluster.ha:
        # And the PostgreSQL leader's port (deploy/haproxy-postgres.cfg), in the same process.
        postgres = (cluster.port("PG_PORT"), [(cluster.node_address(n), cluster.port("NODE%d_PG_PORT" % n),
                                               cluster.port("NODE%d_REST_PORT" % n)) for n in (1, 2, 3)])
    env = dict(cluster.base_env("/"), **haproxy.env(
        cluster.port("HAPROXY_PORT"), cluster.port("HAPROXY_STATS_PORT"),
        [cluster.port("API1_PORT"), cluster.port("API2_PORT")], cluster.conf.get("HAPROXY_SOURCE", HAPROXY_SOURCE),
        postgres))
    process = launch(cluster, "haproxy", haproxy.argv(postgres is not None), env)
    wait_http(cluster, "haproxy", process, cluster.port("HAPROXY_STATS_PORT"), haproxy.HEALTH_PATH, 10)


def start_daemon(cluster, name):
    """The stand-in provider, an API, an enqueuer, a completer or a reaper (started as provider.py
    and daemons.py start them), with the settings recorded in DIR/app.env."""
    env = cluster.app_env()
    what = kind(name)
    logs = cluster.file("logs")
    if what == "stripe-mock":
        process = provider.start(cluster.conf["BIN_DIR"], env, logs, port=cluster.port("MOCK_PORT"), name=name,
                                 wait=False, detached=True, header=header(name))
    elif what == "api":
        process = daemons.start_api(cluster.bin(BINARIES[what]), env, logs, name, cluster.port(name.upper() + "_PORT"),
                                    wait=False, detached=True, header=header(name))
    else:
        if what == "enqueuer":
            # LISTEN needs a session of its own: straight to PostgreSQL, not through PgBouncer.
            env["LISTEN_DATABASE_URL"] = cluster.direct_url()
        process = daemons.start_worker(cluster.bin(BINARIES[what]), env, logs, name, detached=True,
                                       header=header(name))
    cluster.record_pid(name, process.proc.pid)
    if what == "stripe-mock":
        wait_http(cluster, name, process, process.port, provider.READY_PATH, 20)
    elif what == "api":
        wait_http(cluster, name, process, process.port, daemons.API_READY_PATH, 30)
        # Back in service only once HAProxy sends it traffic again.
        if cluster.member_pid("haproxy") is not None:
            wait_haproxy_up(cluster, name, 20)
    else:
        wait_alive(cluster, name, process)


def start_etcd(cluster, n):
    name = "etcd%d" % n
    process = launch(cluster, name, ["/usr/bin/etcd", "--config-file", cluster.file("etcd", name + ".yml")],
                     cluster.base_env("/"), netns=node_netns(cluster, n))
    # A lone member cannot answer until a majority is up: `start` waits for the three together.
    wait_alive(cluster, name, process)


def start_patroni(cluster, n):
    """Debian's Patroni through deploy/patroni-run.py (the leader-key fix of Patroni 3.0.3 on
    3.0.2), as postgres; up once its REST API answers (any status: a replica answers 503)."""
    name = "patroni%d" % n
    process = launch(cluster, name, ["/usr/bin/python3", os.path.join(REPO, "deploy", "patroni-run.py"),
                                     cluster.file("patroni", "n%d.yml" % n)],
                     cluster.base_env("/var/lib/postgresql"), user="postgres", netns=node_netns(cluster, n))
    address, port = cluster.node_address(n), cluster.port("NODE%d_REST_PORT" % n)
    try:
        process.wait_ready(lambda: http_status(port, "/health", host=address, timeout=1) != 0,
                           "answer on its REST API", 30, interval=0.1)
    except HarnessError as error:
        raise _not_ready(cluster, name, error) from None


def start_member(cluster, name):
    """Starts one member as `start` did; a member already running is left as it is."""
    pid = cluster.member_pid(name)
    if pid is not None:
        say("%s already running (pid %d)" % (name, pid))
        return
    if name == "pgbouncer":
        start_pgbouncer(cluster)
    elif name == "haproxy":
        start_haproxy(cluster)
    elif kind(name) in BINARIES:
        start_daemon(cluster, name)
    elif kind(name) == "etcd":
        start_etcd(cluster, int(name[-1]))
    elif kind(name) == "patroni":
        start_patroni(cluster, int(name[-1]))
    else:
        raise ClusterError("no start for %s" % name)


def wait_haproxy_up(cluster, name, seconds=20):
    stats = cluster.port("HAPROXY_STATS_PORT")
    if not haproxy.wait_up(stats, name, seconds):
        say("HAProxy does not report %s UP after %d s (it says: %s)" % (name, seconds, haproxy.state(stats, name)))
        raise ClusterError()


def wait_haproxy_out(cluster, name):
    if cluster.member_pid("haproxy") is None:
        return
    stats = cluster.port("HAPROXY_STATS_PORT")
    if not haproxy.wait_out(stats, name, 5):
        say("HAProxy still reports %s as %s 5 s after it stopped" % (name, haproxy.state(stats, name)))
        raise ClusterError()


def stop_bound(cluster, name):
    what = kind(name)
    if what == "api":
        return int(cluster.setting("SHUTDOWN_DRAIN", "2")) + int(cluster.setting("SHUTDOWN_TIMEOUT", "25")) + 5
    if what in ("enqueuer", "completer", "reaper"):
        return int(cluster.setting("SHUTDOWN_TIMEOUT", "25")) + 5
    return FIXED_BOUNDS.get(what, 10)


def wait_gone(pid, seconds):
    for _ in range(int(seconds * 10)):
        if not pid_running(pid):
            return True
        time.sleep(0.1)
    return not pid_running(pid)


def stop_members(cluster, names, kill9=False):
    """Signals them all (kill9: SIGKILL at once), then waits for each within its bound and kills
    what is left. Never returns while one of them still runs."""
    pids = {}
    for name in names:
        pid = cluster.member_pid(name)
        if pid is None:
            continue
        pids[name] = pid
        try:
            os.kill(pid, signal.SIGKILL if kill9 else SIGNALS.get(name, signal.SIGTERM))
        except OSError:
            pass
    for name in names:
        pid = pids.get(name)
        bound = 10 if kill9 else stop_bound(cluster, name)
        if pid is not None and not wait_gone(pid, bound):
            say("%s (pid %d) did not stop within %d s: kill -9" % (name, pid, bound))
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            if not wait_gone(pid, 10):
                say("%s (pid %d) survives kill -9" % (name, pid))
        try:
            os.remove(cluster.pid_file(name))
        except OSError:
            pass


def stop_member(cluster, name, kill9=False):
    """Returns once it has exited and, for an API, HAProxy has taken it out of rotation."""
    stop_members(cluster, [name], kill9)
    if kind(name) == "api":
        wait_haproxy_out(cluster, name)


def status_lines(cluster):
    """One line per member: its pid or "stopped", and for an API HAProxy's view of it."""
    lines = []
    for name in cluster.members:
        extra = ""
        if kind(name) == "api":
            extra = " haproxy=" + haproxy.state(cluster.port("HAPROXY_STATS_PORT"), name).replace(" ", "_")
        pid = cluster.member_pid(name)
        lines.append("%s running pid=%d%s" % (name, pid, extra) if pid is not None else "%s stopped%s" % (name, extra))
    return lines
