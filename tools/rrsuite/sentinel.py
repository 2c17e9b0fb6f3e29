"""Redis Sentinel as scripts/local-servers.sh --sentinel runs it: three sentinels (quorum 2) on
loopback watching one master as "rocket-rides", each daemonized with its own directory, pid file
and log, with the low failover timings tests and demos want; ready once every sentinel sees the
master, the other two sentinels and the replicas with their links up, so that a failover can
happen at once."""

import os
import time

from .process import HarnessError, run

MASTER_NAME = "rocket-rides"


def write_config(directory, port, master_port, down_after_ms, failover_timeout_ms):
    """Sentinel rewrites its file with what it learns (replicas, other sentinels, failovers), so each
    sentinel has a file and a directory of its own."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "sentinel.conf")
    with open(path, "w") as f:
        f.write("\n".join([
            "port %d" % port, "bind 127.0.0.1", "daemonize yes", "dir " + directory,
            "pidfile " + os.path.join(directory, "sentinel.pid"), "logfile " + os.path.join(directory, "sentinel.log"),
            "sentinel monitor %s 127.0.0.1 %d 2" % (MASTER_NAME, master_port),
            "sentinel down-after-milliseconds %s %d" % (MASTER_NAME, down_after_ms),
            "sentinel failover-timeout %s %d" % (MASTER_NAME, failover_timeout_ms),
            "sentinel parallel-syncs %s 1" % MASTER_NAME]) + "\n")
    return path


def settled(port, sentinels, replicas):
    """This sentinel sees the other sentinels and the replicas, every replica's link up."""
    view = run(["redis-cli", "-p", str(port), "SENTINEL", "master", MASTER_NAME], timeout=10, check=False)
    fields = view.stdout.decode(errors="replace").split("\n")
    pairs = dict(zip(fields[0::2], fields[1::2]))
    if pairs.get("num-other-sentinels") != str(sentinels - 1) or pairs.get("num-slaves") != str(replicas):
        return False
    listed = run(["redis-cli", "-p", str(port), "SENTINEL", "replicas", MASTER_NAME], timeout=10, check=False)
    return "ok" in listed.stdout.decode(errors="replace").split("\n")


def start(directory, master_port, ports, replicas=1, down_after_ms=1000, failover_timeout_ms=3000, timeout=30.0):
    """Sentinels on `ports` in DIRECTORY/sentinel-1.. watching the master on `master_port`."""
    for n, port in enumerate(ports, 1):
        config = write_config(os.path.join(directory, "sentinel-%d" % n), port, master_port, down_after_ms,
                              failover_timeout_ms)
        run(["redis-sentinel", config], timeout=30)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(settled(port, len(ports), replicas) for port in ports):
            return
        time.sleep(0.1)
    raise HarnessError("the sentinels did not settle within %.0f s (see %s/sentinel-*/sentinel.log)" % (
        timeout, directory))
