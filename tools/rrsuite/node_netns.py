"""The HA shape's node namespaces (scripts/cluster.sh start DIR --ha --netns PREFIX): each node's
etcd, Patroni and PostgreSQL run in a network namespace PREFIXn1..n3 of its own, linked by one
veth pair each to a bridge PREFIXbr on 10.213.X.0/24 in the caller's namespace; a partition takes a
node's end of its link down. Only ever inside a namespace the caller made, never the machine's own
(its interfaces and routes are nobody's test). Root only."""

import os
import subprocess
import zlib

from . import members
from .clusterdir import NODES, ClusterError, say
from .netns import ip


def run_ip(*args):
    """`ip ARGS`, or the error that stops the start (its stderr on the line)."""
    result = ip(*args)
    if result.returncode != 0:
        raise ClusterError("ip %s: %s" % (" ".join(args), result.stderr.decode(errors="replace").strip()))
    return result.stdout.decode(errors="replace")


def link_names():
    """The interfaces of this namespace, without the "@peer" suffix `ip -o link` gives a veth."""
    names = []
    for line in ip("-o", "link", "show").stdout.decode(errors="replace").splitlines():
        fields = line.split(": ")
        if len(fields) > 1:
            names.append(fields[1].split("@")[0])
    return names


def check_not_initial(prefix):
    """The initial namespace is PID 1's; where PID 1's is not readable (a container), a namespace
    with any interface besides loopback and this cluster's own is taken for the machine's."""
    try:
        own = os.readlink("/proc/self/ns/net")
    except OSError:
        raise ClusterError("--netns: cannot read this process's network namespace")
    try:
        initial = os.readlink("/proc/1/ns/net")
    except OSError:
        initial = None
    if initial is not None:
        if own == initial:
            raise ClusterError("--netns refuses to run in the machine's initial network namespace: run it inside one "
                               "you made (ip netns add NAME; ip netns exec NAME ...)")
        return
    ours = {"lo", prefix + "br"} | {"%sn%dh" % (prefix, n) for n in NODES}
    others = [name for name in link_names() if name not in ours]
    if others:
        raise ClusterError("--netns refuses to run here: PID 1's namespace is unreadable and this one has interfaces "
                           "of its own (%s), so it may be the machine's; run it inside a namespace you made (ip netns "
                           "add NAME; ip netns exec NAME bash -c 'ip link set lo up; ...')" % " ".join(others))


def free_network(prefix):
    """X of 10.213.X.0/24: from a hash of the prefix (a prefix keeps its network from one start to
    the next), moved on while this namespace routes that network already."""
    x = zlib.crc32(prefix.encode()) % 250 + 1
    for _ in range(250):
        if not ip("-4", "route", "show", "10.213.%d.0/24" % x).stdout.strip():
            break
        x = x % 250 + 1
    return x


def up(cluster, prefix):
    """Makes the bridge and the three namespaces, each with a process that holds it for the
    cluster's life (the way in for later commands: a namespace's /run/netns file is a bind mount,
    which a command from another mount namespace does not see), and records NETNS_PREFIX and
    NETNS_NET in cluster.conf."""
    if len(prefix) > 11:
        raise ClusterError("--netns prefix too long (at most 11 characters: interface names are %sn1h)" % prefix)
    if not prefix or any(not (c.isascii() and (c.isalnum() or c in "-_")) for c in prefix):
        raise ClusterError("--netns prefix: letters, digits, - and _ only")
    check_not_initial(prefix)
    for n in NODES:
        if os.path.exists("/run/netns/%sn%d" % (prefix, n)):
            raise ClusterError("network namespace %sn%d exists already (another cluster? scripts/cluster.sh stop its "
                               "DIR)" % (prefix, n))
    x = free_network(prefix)
    with open(cluster.file("cluster.conf"), "a") as conf:
        conf.write("NETNS_PREFIX=%s\nNETNS_NET=%d\n" % (prefix, x))
    cluster.conf.update({"NETNS_PREFIX": prefix, "NETNS_NET": str(x)})
    say("network namespaces %sn1..3 on 10.213.%d.0/24 (bridge %sbr, 10.213.%d.1)" % (prefix, x, prefix, x))
    bridge = prefix + "br"
    run_ip("link", "add", bridge, "type", "bridge")
    run_ip("addr", "add", "10.213.%d.1/24" % x, "dev", bridge)
    run_ip("link", "set", bridge, "up")
    for n in NODES:
        name, host_end, node_end = "%sn%d" % (prefix, n), "%sn%dh" % (prefix, n), "%sn%dv" % (prefix, n)
        run_ip("netns", "add", name)
        holder = subprocess.Popen(["ip", "netns", "exec", name, "sleep", "infinity"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        cluster.record_pid("netns-n%d" % n, holder.pid)
        run_ip("-n", name, "link", "set", "lo", "up")
        run_ip("link", "add", host_end, "type", "veth", "peer", "name", node_end, "netns", name)
        run_ip("link", "set", host_end, "master", bridge, "up")
        run_ip("-n", name, "addr", "add", "%s/24" % cluster.node_address(n), "dev", node_end)
        run_ip("-n", name, "link", "set", node_end, "up")


def down(cluster):
    """Removes what `up` made, whatever of it is there (a start that failed midway included)."""
    prefix = cluster.conf.get("NETNS_PREFIX")
    if not prefix:
        return
    for n in NODES:
        host_end = "%sn%dh" % (prefix, n)
        # The host end of the veth pair: deleting it deletes the node's end too.
        if ip("link", "show", host_end).returncode == 0:
            ip("link", "del", host_end)
        members.stop_members(cluster, ["netns-n%d" % n])
        # The namespace goes once nothing holds it: no process in it (its holder stopped above) and
        # no bind mount (removed here; in a mount namespace that cannot see the mount, only the file).
        path = "/run/netns/%sn%d" % (prefix, n)
        if os.path.exists(path) and ip("netns", "del", "%sn%d" % (prefix, n)).returncode != 0:
            try:
                os.remove(path)
            except OSError:
                pass
    bridge = prefix + "br"
    if ip("link", "show", bridge).returncode == 0 and ip("link", "del", bridge).returncode != 0:
        say("could not remove bridge %s" % bridge)


def set_link(cluster, node, state):
    """partition (state "down") or heal ("up") node nX: its end of its only link, so it reaches
    nothing (etcd peers, the other nodes, HAProxy) and nothing reaches it; its processes run on."""
    what = "heal" if state == "up" else "partition"
    if node not in ("n1", "n2", "n3"):
        raise ClusterError("%s: which node? (n1, n2 or n3)" % what)
    prefix = cluster.conf.get("NETNS_PREFIX")
    if not prefix:
        raise ClusterError("%s needs a cluster started with --netns" % what)
    holder = cluster.member_pid("netns-%s" % node)
    if holder is None:
        raise ClusterError("the holder of node %s's network namespace is gone (stop and start the cluster)" % node)
    result = subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % holder, "--", "ip", "link", "set",
                             "%s%sv" % (prefix, node), state], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, timeout=30)
    if result.returncode != 0:
        raise ClusterError("%s %s: %s" % (what, node, result.stderr.decode(errors="replace").strip()))
    say("%s: link %s" % (node, state))
