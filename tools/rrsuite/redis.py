"""A Redis server as scripts/local-servers.sh runs one (loopback, no persistence, daemonized with
a pid file and a log), started again after a fault, and stopped the way an operator's restart
does."""

import os
import time

from .process import HarnessError, run


def cli(port, *args, host="127.0.0.1", timeout=30, check=True):
    return run(["redis-cli", "-h", host, "-p", str(port)] + list(args), timeout=timeout, check=check)


def start(port, directory, pidfile, logfile, replica_ready=False, timeout=20.0, replicaof=None,
          replica_priority=None):
    """redis-server on 127.0.0.1:port with --dir `directory` (which holds any dump it loads);
    returns once it answers PING. replica_ready: no delay before a full sync to a replica;
    replicaof: the port of a master on 127.0.0.1 this one replicates; replica_priority: its
    priority for Sentinel (0: never promoted)."""
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "yes", "--pidfile", pidfile, "--logfile", logfile, "--dir", directory]
    if replica_ready:
        argv += ["--repl-diskless-sync-delay", "0"]
    if replicaof:
        argv += ["--replicaof", "127.0.0.1", str(replicaof)]
    if replica_priority is not None:
        argv += ["--replica-priority", str(replica_priority)]
    run(argv, timeout=30)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cli(port, "PING", check=False).returncode == 0:
            return
        time.sleep(0.05)
    raise HarnessError("Redis did not answer PING on port %d within %.0f s (log: %s)" % (port, timeout, logfile))


def shutdown_save(port, pidfile, timeout=20.0):
    """SHUTDOWN SAVE (a server without persistence keeps its dataset for the next start), then
    waits for the pid in `pidfile` to be gone."""
    cli(port, "SHUTDOWN", "SAVE", check=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(pidfile) as f:
                os.kill(int(f.read().strip()), 0)
        except (OSError, ValueError):
            return
        time.sleep(0.05)
