"""`python3 -m rrsuite cluster COMMAND DIR ...`: scripts/cluster.sh's commands, both shapes;
scripts/cluster.sh is the command line operators and docs use and calls this (its header says what
each command does; the output is the same line for line: tests/scripts/cluster_cli.golden).

  start DIR [--bin-dir BIN] [--ha [--async] [--netns PREFIX]]
                                   the plain shape (cluster_plain.py) or the HA shape (cluster_ha.py);
                                   export lines on stdout; a start that fails stops what it started
  stop DIR                         either shape, everything (safe to call twice)
  env DIR                          the export lines
  status DIR                       a line per member; the HA shape's leader and nodes; the backups
  start-member DIR NAME            one member, as `start` started it
  stop-member DIR NAME [--kill]    any member; an API until HAProxy has it out
  stop-members DIR [--kill] NAME...   several at once (graceful signals, then each bound)
  restart DIR NAME                 stop-member then start-member
  rolling-restart DIR              api1 then api2, each only while the other is UP
  leader DIR                       (HA) the leader's name, or exit 1
  failover DIR [--candidate nX], switchover DIR [--candidate nX]
                                   (HA) ha_leader.py
  kill-postgres DIR nX, partition DIR nX, heal DIR nX
                                   (HA) node_postgres.py, node_netns.py
  backup DIR [--full|--diff], backups DIR, verify DIR, backup-metrics DIR FILE
                                   cluster_backup.py (pgBackRest: backup.py)
  restore DIR --to TIME|--latest   cluster_restore.py
Also, for scripts and tests that drive the HA shape step by step:
  postgres-pid DIR N, stop-nodes-postgres DIR, wait-primary DIR N SECONDS, wait-standbys DIR
  SECONDS, wait-serving-leader DIR SECONDS, etcd-clear DIR
                                   (HA) node N's postmaster, all three stopped fast, the waits of
                                   `start` (exit 1 when they time out), the cluster's keys in etcd
                                   deleted

Progress goes to stderr as "cluster: ..."; a failure says one line and exits 1 (a usage error of
backup: 2)."""

import os
import shutil
import signal
import traceback

from . import (cluster_backup, cluster_ha, cluster_plain, cluster_restore, cluster_steps, ha_leader, ha_state, haproxy,
               members, node_netns, node_postgres)
from .clusterdir import ClusterDir, ClusterError, command_main, say
from .paths import REPO

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


def parse_start(args):
    """start's options: (bin_dir, ha, asynchronous, netns_prefix)."""
    bin_dir = os.environ.get("ROCKET_RIDES_BIN") or os.path.join(REPO, "build", "bin")
    ha = asynchronous = False
    netns_prefix = ""
    while args:
        if args[0] in ("--bin-dir", "--netns"):
            if len(args) < 2 or not args[1]:
                raise ClusterError("%s needs %s" % (args[0], "a directory" if args[0] == "--bin-dir" else "a prefix"))
            if args[0] == "--bin-dir":
                bin_dir = args[1]
            else:
                netns_prefix = args[1]
            args = args[2:]
        elif args[0] == "--ha":
            ha, args = True, args[1:]
        elif args[0] == "--async":
            asynchronous, args = True, args[1:]
        else:
            raise ClusterError("unknown option %s" % args[0])
    if (asynchronous or netns_prefix) and not ha:
        raise ClusterError("--async and --netns go with --ha")
    return bin_dir, ha, asynchronous, netns_prefix


def start(cluster, args):
    bin_dir, ha, asynchronous, netns_prefix = parse_start(args)
    bin_dir = check_requirements(bin_dir)
    if ha:
        cluster_ha.check_requirements()
    if cluster.exists():
        cluster.load()
        if cluster.ha != ha:
            raise ClusterError("%s holds a cluster of the other shape: stop it and use another directory"
                               % cluster.path)
        running = [m for m in cluster.members if cluster.member_pid(m) is not None]
        if len(running) == len(cluster.members):
            say("already running in %s" % cluster.path)
            print("\n".join(cluster_steps.export_lines(cluster)), flush=True)
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
        if ha:
            cluster_ha.start(cluster, bin_dir, asynchronous, netns_prefix)
        else:
            cluster_plain.start(cluster, bin_dir)
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


def stop(cluster):
    """Either shape; safe to call twice, and on a start that failed midway."""
    if cluster.exists():
        cluster.load()
        if cluster.ha:
            return cluster_ha.stop(cluster)
    return cluster_plain.stop(cluster)


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
        print("\n".join(cluster_steps.export_lines(cluster)), flush=True)
    elif command == "status":
        lines = members.status_lines(cluster)
        if cluster.ha:
            lines += ha_state.node_lines(cluster)
        print("\n".join(lines), flush=True)
        cluster_backup.status_lines(cluster)
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
    elif command in cluster_backup.COMMANDS:
        cluster_backup.run(cluster, command, args)
    elif command == "restore":
        cluster_restore.restore(cluster, args)
    elif command in HA_COMMANDS:
        if not cluster.ha:
            raise ClusterError("%s: only for a cluster started with --ha" % command)
        run_ha(cluster, command, args)
    else:
        raise ClusterError("unknown command %s" % command)


HA_COMMANDS = ("leader", "failover", "switchover", "kill-postgres", "partition", "heal", "postgres-pid",
               "stop-nodes-postgres", "wait-primary", "wait-standbys", "wait-serving-leader", "etcd-clear")


def seconds_argument(args, index=0):
    try:
        return int(args[index])
    except (IndexError, ValueError):
        raise ClusterError("which bound? (seconds)") from None


def run_ha(cluster, command, args):
    if command == "leader":
        leader = ha_state.leader_name(cluster)
        if leader is None:
            raise ClusterError("")  # none: exit 1, and nothing to say
        print(leader, flush=True)
    elif command in ("failover", "switchover"):
        ha_leader.change(cluster, command, args)
    elif command == "kill-postgres":
        node_postgres.kill(cluster, args[0] if args else "")
    elif command in ("partition", "heal"):
        node_netns.set_link(cluster, args[0] if args else "", "down" if command == "partition" else "up")
    elif command == "postgres-pid":
        pid = node_postgres.postmaster_pid(cluster, int(args[0]))
        if pid is None:
            raise ClusterError("")
        print(pid, flush=True)
    elif command == "stop-nodes-postgres":
        node_postgres.stop_all(cluster)
    elif command == "wait-primary":
        if not ha_state.wait_primary(cluster, int(args[0]), seconds_argument(args, 1)):
            raise ClusterError("")
    elif command == "wait-standbys":
        if not ha_state.wait_standbys(cluster, seconds_argument(args)):
            raise ClusterError("")
    elif command == "wait-serving-leader":
        leader = ha_state.wait_serving_leader(cluster, seconds_argument(args))
        if leader is None:
            raise ClusterError("")
        print(leader, flush=True)
    elif command == "etcd-clear":
        ha_state.clear_keys(cluster)


def main(argv):
    return command_main(argv, __doc__, run, say)
