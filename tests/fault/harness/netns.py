"""The HA profiles' network namespace: the whole run happens inside one the suite makes (root),
which scripts/cluster.sh --ha --netns needs, and deletes afterwards with the nodes' own, whatever
happens."""

import os
import signal
import subprocess
import sys
import time

from .base import SCRIPT, Stop, log


def _ip(*args, timeout=30):
    return subprocess.run(["ip"] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def remove_netns(names):
    """Kills what still runs in each namespace (only this run's processes ever run there) and
    deletes it. Namespaces that are gone already are skipped."""
    listed = _ip("netns", "list").stdout.decode()
    present = {line.split()[0] for line in listed.splitlines() if line.strip()}
    for name in names:
        if name not in present:
            continue
        for _ in range(3):
            pids = [int(p) for p in _ip("netns", "pids", name).stdout.decode().split() if p.isdigit()]
            if not pids:
                break
            log("killing %d process(es) left in network namespace %s: %s" % (len(pids), name, pids))
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.5)
        result = _ip("netns", "delete", name)
        if result.returncode != 0:
            log("ip netns delete %s: %s" % (name, result.stderr.decode(errors="replace").strip()))


def run_in_netns(args, argv):
    """The HA profiles run inside a network namespace of their own (scripts/cluster.sh --ha
    --netns refuses the machine's initial one): this makes it (rrf<pid>, only lo, up), runs the
    suite again inside it with --inside-netns, and deletes it afterwards whatever happens, with
    the nodes' namespaces (rrf<pid>n1..3) if the cluster script left any. A guardian outside our
    process tree does the same if this process is killed outright."""
    name = "rrf%d" % os.getpid()
    names = ["%sn%d" % (name, i) for i in (1, 2, 3)] + [name]
    script = ('while kill -0 "$1" 2>/dev/null; do sleep 1; done; ip netns list | grep -q "^$2\\b" || exit 0; '
              'for i in $(seq 1 120); do [ -z "$(ip netns pids "$2" 2>/dev/null)" ] && break; sleep 1; done; '
              'for ns in "$2n1" "$2n2" "$2n3" "$2"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9; '
              'ip netns delete "$ns" 2>/dev/null; done; exit 0')
    subprocess.run(["setsid", "-f", "sh", "-c", script, "netns-guardian", str(os.getpid()), name],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    child = None
    stopping = []

    def on_signal(signum, _frame):
        stopping.append(signum)
        if child is not None and child.poll() is None:
            try:
                child.send_signal(signal.SIGTERM)
            except OSError:
                pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)
    try:
        for argv_ip in (["netns", "add", name], ["-n", name, "link", "set", "lo", "up"]):
            result = _ip(*argv_ip)
            if result.returncode != 0:
                log("HARNESS ERROR: ip %s: %s" % (" ".join(argv_ip), result.stderr.decode(errors="replace").strip()))
                return 2
        log("running inside network namespace %s" % name)
        inner = [sys.executable, SCRIPT] + list(argv) + [
            "--inside-netns", "--netns-prefix", name, "--seed", str(args.seed)]
        child = subprocess.Popen(["ip", "netns", "exec", name] + inner, stdin=subprocess.DEVNULL)
        while True:
            try:
                return child.wait()
            except Stop:
                pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=300)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        # The inner run's own guardian stops the cluster if the inner run died outright: give it
        # time to (the namespace empties), then kill whatever is left.
        deadline = time.time() + 120
        while time.time() < deadline and _ip("netns", "pids", name).stdout.strip():
            time.sleep(1)
        remove_netns(names)
        log("network namespaces %s removed" % ", ".join(names))
