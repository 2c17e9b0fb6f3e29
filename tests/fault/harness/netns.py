"""The HA profiles' network namespace: the whole run happens inside one the suite makes (root),
which scripts/cluster.sh --ha --netns needs, and deletes afterwards with the nodes' own, whatever
happens."""

import os
import signal
import subprocess
import sys
import time

from rrsuite import netns

from .base import SCRIPT, Stop, log


def run_in_netns(args, argv):
    """The HA profiles run inside a network namespace of their own (scripts/cluster.sh --ha
    --netns refuses the machine's initial one): this makes it (rrf<pid>, only lo, up), runs the
    suite again inside it with --inside-netns, and deletes it afterwards whatever happens, with
    the nodes' namespaces (rrf<pid>n1..3) if the cluster script left any. A guardian outside our
    process tree does the same if this process is killed outright."""
    name = "rrf%d" % os.getpid()
    names = ["%sn%d" % (name, i) for i in (1, 2, 3)] + [name]
    netns.guard(name)
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
        error = netns.create(name)
        if error:
            log("HARNESS ERROR: %s" % error)
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
        while time.time() < deadline and netns.pids(name):
            time.sleep(1)
        netns.remove(names, log=log)
        log("network namespaces %s removed" % ", ".join(names))
