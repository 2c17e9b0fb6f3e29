"""The HA shape's PostgreSQL servers as processes (scripts/cluster.sh --ha): each node's postmaster,
found from its data directory DIR/patroni/nN/data; a kill -9 of one (a fault to recover from); a
fast shutdown of them all (the restore's first step); and any left running without its Patroni
(after a kill -9 of Patroni, or one Patroni lost track of), stopped."""

import os
import signal

from .clusterdir import NODES, ClusterError, pid_running, say
from .members import wait_gone
from .process import command_lines


def data_dir(cluster, n):
    return cluster.file("patroni", "n%d" % n, "data")


def postmaster_pid(cluster, n):
    """Node n's running postmaster from its postmaster.pid, or None. Ours only: a reused pid would
    not be running out of this data directory."""
    try:
        with open(os.path.join(data_dir(cluster, n), "postmaster.pid")) as f:
            pid = int(f.readline())
    except (OSError, ValueError):
        return None
    if not pid_running(pid):
        return None
    try:
        if os.readlink("/proc/%d/cwd" % pid) != data_dir(cluster, n):
            return None
    except OSError:
        return None
    return pid


def node_number(what, node):
    if node not in ("n1", "n2", "n3"):
        raise ClusterError("%s: which node? (n1, n2 or n3)" % what)
    return int(node[1])


def kill(cluster, node):
    """kill-postgres nX: SIGKILL to node nX's postmaster."""
    pid = postmaster_pid(cluster, node_number("kill-postgres", node))
    if pid is None:
        raise ClusterError("no postgres running on %s" % node)
    os.kill(pid, signal.SIGKILL)
    say("%s: kill -9 of postgres (pid %d)" % (node, pid))


def postmasters(cluster, n):
    """Every postmaster started on node n's data directory (argv "/.../bin/postgres -D DIR ..."),
    even one whose postmaster.pid or directory is gone (docs/high-availability.md: Patroni 3.0.2
    can lose track of one and remove its data directory under it)."""
    want = data_dir(cluster, n).encode()
    return [pid for pid, argv in command_lines()
            if len(argv) > 2 and argv[0].endswith(b"/bin/postgres") and argv[1] == b"-D" and argv[2] == want]


def signal_and_wait(pid, signum, seconds):
    try:
        os.kill(pid, signum)
    except OSError:
        return True
    return wait_gone(pid, seconds)


def stop_orphans(cluster):
    """A postgres left behind by a Patroni killed with -9 (or lost by it): immediate shutdown,
    then -9."""
    for n in NODES:
        for pid in postmasters(cluster, n):
            say("n%d: postgres (pid %d) runs without its patroni: stopping it" % (n, pid))
            if not signal_and_wait(pid, signal.SIGQUIT, 10):
                signal_and_wait(pid, signal.SIGKILL, 10)


def stop_all(cluster):
    """A fast shutdown (clients cut, a checkpoint) of every node's PostgreSQL at once, each bounded
    by a minute, then what stop_orphans does with any left."""
    running = [pid for pid in (postmaster_pid(cluster, n) for n in NODES) if pid is not None]
    for pid in running:
        try:
            os.kill(pid, signal.SIGINT)
        except OSError:
            pass
    for pid in running:
        wait_gone(pid, 60)
    stop_orphans(cluster)
