"""scripts/cluster.sh's cluster (plain or HA) as the suites drive it: started with a guardian,
its export lines and recorded settings read back, and its members behind Process's interface
(start, alive, kill9, stop), started and stopped by the script, which knows how each runs."""

import os

from .clusterdir import ClusterDir
from .local_servers import parse_exports
from .paths import CLUSTER
from .process import HarnessError, Readiness, guard, run

# Settings a caller's environment must not pass on to the cluster's members: the suites set their
# own, and the script records them for every later start of a member.
OWNED_PREFIXES = ("DATABASE_", "REDIS_", "STRIPE_", "COMPLETER_", "ENQUEUER_", "REAPER_", "IDEMPOTENCY_", "MOCK_",
                  "API_", "PORT", "METRICS_", "LOCAL_SERVERS", "SHUTDOWN_", "RESPONSE_CACHE_", "TOKEN_CACHE_",
                  "LISTEN_", "RECONCILE_")


def script(*args, env=None, timeout=120, check=True):
    """scripts/cluster.sh ARGS...; with `check`, a failure raises HarnessError with its stderr."""
    result = run([CLUSTER] + [str(a) for a in args], env=env, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise HarnessError("scripts/cluster.sh %s failed (exit %d): %s" % (
            " ".join(str(a) for a in args), result.returncode, result.stderr.decode(errors="replace")[-3000:]))
    return result


def start(cluster_dir, bin_dir, env, options=(), timeout=300):
    """scripts/cluster.sh start DIR --bin-dir BIN OPTIONS...; returns its export lines as a dict.
    A guardian stops the cluster if the caller is killed outright (the members run in sessions of
    their own, out of reach of PR_SET_PDEATHSIG)."""
    guard(CLUSTER, cluster_dir, "cluster.conf")
    result = script("start", cluster_dir, "--bin-dir", bin_dir, *options, env=env, timeout=timeout)
    return parse_exports(result.stdout.decode())


def stop(cluster_dir, env=None, timeout=300):
    return script("stop", cluster_dir, env=env, timeout=timeout, check=False)


def app_settings(cluster_dir):
    """DIR/app.env: the daemons' settings as scripts/cluster.sh recorded them, {name: value}."""
    return dict(ClusterDir(cluster_dir).app_settings())


class Member(Readiness):
    """A member of the cluster (api1, enqueuer2, pgbouncer, ...): the script starts and stops it;
    its pid file tells whether it runs. Not our child, so its exit status is unknown."""

    class _Proc:
        def __init__(self, pid):
            self.pid = pid
            self.returncode = None

    def __init__(self, cluster_dir, name, slow=1.0, port=None):
        self.cluster_dir = cluster_dir
        self.name = name
        self.slow = slow
        self.port = port
        self.log_path = os.path.join(cluster_dir, "logs", name + ".log")
        self.starts = 1
        self.kills = 0

    def pid(self):
        """Its pid while the very process the script started runs (not a zombie, not a reused pid)."""
        return ClusterDir(self.cluster_dir).member_pid(self.name)

    @property
    def proc(self):
        return Member._Proc(self.pid() or -1)

    def alive(self):
        return self.pid() is not None

    def start(self):
        # Returns once it serves (for an API: once HAProxy has it UP again).
        script("start-member", self.cluster_dir, self.name, timeout=120 * self.slow)
        self.starts += 1

    def kill9(self):
        if self.alive():
            self.kills += 1
        script("stop-member", self.cluster_dir, self.name, "--kill", timeout=120 * self.slow)

    def stop(self, grace=5.0):
        script("stop-member", self.cluster_dir, self.name, timeout=120 * self.slow)
