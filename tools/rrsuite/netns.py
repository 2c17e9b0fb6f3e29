"""Network namespaces for the HA shape (scripts/cluster.sh --ha --netns runs each node in one of
its own inside a namespace the caller made): make one, and delete namespaces with whatever still
runs in them; a guardian does the deleting if the caller is killed outright. Root only."""

import os
import signal
import subprocess
import time


def ip(*args, timeout=30):
    return subprocess.run(["ip"] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def create(name):
    """A namespace with only lo, up; returns None, or the error of the `ip` command that failed."""
    for argv in (["netns", "add", name], ["-n", name, "link", "set", "lo", "up"]):
        result = ip(*argv)
        if result.returncode != 0:
            return "ip %s: %s" % (" ".join(argv), result.stderr.decode(errors="replace").strip())
    return None


def pids(name):
    return [int(p) for p in ip("netns", "pids", name).stdout.decode().split() if p.isdigit()]


def remove(names, log=print):
    """Kills what still runs in each namespace (only the caller's processes ever run there) and
    deletes it. Namespaces that are gone already are skipped."""
    listed = ip("netns", "list").stdout.decode()
    present = {line.split()[0] for line in listed.splitlines() if line.strip()}
    for name in names:
        if name not in present:
            continue
        for _ in range(3):
            left = pids(name)
            if not left:
                break
            log("killing %d process(es) left in network namespace %s: %s" % (len(left), name, left))
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.5)
        result = ip("netns", "delete", name)
        if result.returncode != 0:
            log("ip netns delete %s: %s" % (name, result.stderr.decode(errors="replace").strip()))


def guard(name, grace=120):
    """Once this process is gone: waits up to `grace` seconds for namespace `name` to empty (what
    runs inside may be stopping its cluster), then kills what is left in it and in the nodes'
    namespaces (NAMEn1..3) and deletes them all. Outside our process tree (setsid -f)."""
    script = ('while kill -0 "$1" 2>/dev/null; do sleep 1; done; ip netns list | grep -q "^$2\\b" || exit 0; '
              'for i in $(seq 1 "$3"); do [ -z "$(ip netns pids "$2" 2>/dev/null)" ] && break; sleep 1; done; '
              'for ns in "$2n1" "$2n2" "$2n3" "$2"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9; '
              'ip netns delete "$ns" 2>/dev/null; done; exit 0')
    subprocess.run(["setsid", "-f", "sh", "-c", script, "netns-guardian", str(os.getpid()), name, str(grace)],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
