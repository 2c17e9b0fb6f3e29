"""A cluster directory of scripts/cluster.sh (DIR): what its files record and how its members are
found again. The cluster outlives every command that drives it, so all its state is on disk:
DIR/cluster.conf (ports, shape, bin directory: NAME=value lines, bash-quoted), DIR/app.env (the
daemons' settings, K=V lines), DIR/pids/NAME.pid ("PID START_TIME": the start time tells our
process from another that reused its pid), DIR/logs/NAME.log. Also the voice of the command line
("cluster: ..." on stderr) and its one way to fail (ClusterError: one line, exit 1)."""

import os
import shlex
import sys
import time

HAPROXY_SOURCE = "127.0.0.80"
PLAIN_MEMBERS = ["pgbouncer", "haproxy", "stripe-mock", "api1", "api2", "enqueuer1", "enqueuer2", "completer1",
                 "completer2", "reaper"]
HA_MEMBERS = ["etcd1", "etcd2", "etcd3", "patroni1", "patroni2", "patroni3", "pgbouncer", "haproxy", "stripe-mock",
              "api1", "api2", "enqueuer1", "enqueuer2", "completer1", "completer2", "reaper1", "reaper2"]
# What PATH, LANG and HOME every member gets; nothing else leaks in from the caller's shell.
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# The HA shape's nodes, n1..n3: three, so that etcd and Patroni keep a majority with one lost.
NODES = (1, 2, 3)


class ClusterError(Exception):
    """What the command line says before it exits 1 (bash's die)."""


def say(message):
    """One progress line on stderr. During a restore (RRSUITE_SAY_SINCE: the epoch second the
    restore began) each line says how far in it is, as cluster.sh's own lines do."""
    since = os.environ.get("RRSUITE_SAY_SINCE")
    if since:
        message = "[+%d s] %s" % (int(time.time()) - int(since), message)
    print("cluster: " + message, file=sys.stderr, flush=True)


def command_main(argv, usage, run, voice, operands=2):
    """The exit status of one of rrsuite's command lines: 2 and `usage` when argv lacks its first
    `operands` words (COMMAND, or COMMAND DIR); otherwise run(*those, rest), and 1 after a
    ClusterError's line in the command's own `voice` (bash's die), or 0."""
    if len(argv) < operands:
        print(usage, file=sys.stderr)
        return 2
    try:
        run(*argv[:operands], argv[operands:])
    except ClusterError as error:
        if str(error):
            voice(str(error))
        return getattr(error, "exit_code", 1)
    return 0


def read_assignments(path):
    """{NAME: value} of a file of NAME=value lines, values unquoted as bash would read them."""
    values = {}
    with open(path) as f:
        for line in f:
            name, sep, value = line.rstrip("\n").partition("=")
            if sep and name and not name.startswith("#"):
                words = shlex.split(value) if value else []
                values[name] = words[0] if words else ""
    return values


def bash_quote(value):
    """printf %q for the values a cluster has (paths, ports, tokens): bare when safe."""
    if value == "":
        return "''"
    if all(c.isalnum() or c in "_/:.@%+=,-" for c in value):
        return value
    return shlex.quote(value)


def start_time_of(pid):
    """Field 22 of /proc/PID/stat, which tells a reused pid from ours; None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def pid_running(pid):
    """Alive and not a zombie (a member this very command started and that died is one)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class ClusterDir:
    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.conf = {}

    def file(self, *parts):
        return os.path.join(self.path, *parts)

    def exists(self):
        return os.path.isfile(self.file("cluster.conf"))

    def load(self):
        """Reads cluster.conf, or fails as cluster.sh does when there is no cluster."""
        if not self.exists():
            raise ClusterError("no cluster in %s (run: %s start %s)" % (self.path, cluster_script(), self.path))
        self.conf = read_assignments(self.file("cluster.conf"))
        return self

    @property
    def ha(self):
        return self.conf.get("HA") == "1"

    @property
    def members(self):
        return HA_MEMBERS if self.ha else PLAIN_MEMBERS

    @property
    def app_members(self):
        return [m for m in self.members if m.startswith(("api", "enqueuer", "completer", "reaper"))]

    def port(self, name):
        return int(self.conf[name])

    def bin(self, name):
        return os.path.join(self.conf["BIN_DIR"], name)

    def direct_url(self):
        return "postgresql://postgres@127.0.0.1:%s/rocket_rides" % self.conf["PG_PORT"]

    def pooled_url(self):
        return "postgresql://postgres@127.0.0.1:%s/rocket_rides" % self.conf["PGBOUNCER_PORT"]

    def node_address(self, n):
        if self.conf.get("NETNS_PREFIX"):
            return "10.213.%s.%d" % (self.conf["NETNS_NET"], 10 + n)
        return "127.0.0.1"

    # --- the daemons' recorded settings

    def app_settings(self):
        """DIR/app.env as (name, value) pairs, in the file's order."""
        pairs = []
        try:
            with open(self.file("app.env")) as f:
                for line in f:
                    name, sep, value = line.rstrip("\n").partition("=")
                    if sep and name:
                        pairs.append((name, value))
        except OSError:
            pass
        return pairs

    def setting(self, name, default):
        for key, value in self.app_settings():
            if key == name:
                return value
        return default

    def base_env(self, home="/"):
        return {"PATH": BASE_PATH, "LANG": "C.UTF-8", "HOME": home}

    def app_env(self):
        env = self.base_env("/")
        env.update(self.app_settings())
        return env

    # --- pid files

    def pid_file(self, name):
        return self.file("pids", name + ".pid")

    def member_pid(self, name):
        """The member's pid if the very process we started runs, else None."""
        try:
            with open(self.pid_file(name)) as f:
                pid, started = f.read().split()
            pid = int(pid)
        except (OSError, ValueError):
            return None
        if pid_running(pid) and start_time_of(pid) == started:
            return pid
        return None

    def record_pid(self, name, pid):
        with open(self.pid_file(name), "w") as f:
            f.write("%d %s\n" % (pid, start_time_of(pid) or ""))

    def log_path(self, name):
        return self.file("logs", name + ".log")

    def log_tail(self, name, lines=15):
        """The end of a member's log, indented, on stderr (after a line that names it)."""
        try:
            with open(self.log_path(name), "rb") as f:
                text = f.read().decode(errors="replace").splitlines()[-lines:]
        except OSError:
            return
        for line in text:
            print("    " + line, file=sys.stderr)
        sys.stderr.flush()


def cluster_script():
    """How the operator called scripts/cluster.sh (its $0, which it passes on), for messages."""
    from .paths import CLUSTER
    return os.environ.get("RRSUITE_CLUSTER_SCRIPT") or CLUSTER
