"""The daemons the suite runs: its own children (Daemon, killed with the suite through
PR_SET_PDEATHSIG) and the members scripts/cluster.sh starts for it (ClusterMember), behind one
interface (start, alive, kill9, stop)."""

import ctypes
import os
import signal
import subprocess
import threading
import time

from .base import CLUSTER, HarnessError, run


_libc = None


def _set_pdeathsig():
    # Runs in the child before exec: die with the thread that spawned us. Every spawn happens on
    # the main thread, which lives for the whole run.
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Daemon:
    """One of the suite's binaries, started with its own environment, restartable."""

    def __init__(self, name, argv, env, log_dir):
        self.name = name
        self.argv = argv
        self.env = env
        self.log_path = os.path.join(log_dir, name + ".log")
        self.proc = None
        self.starts = 0
        self.kills = 0

    def start(self):
        assert threading.current_thread() is threading.main_thread()
        logfile = open(self.log_path, "ab")
        logfile.write(("\n==== start %d at %s ====\n" % (self.starts + 1, time.strftime("%H:%M:%S"))).encode())
        logfile.flush()
        self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=logfile,
                                     stderr=subprocess.STDOUT, preexec_fn=_set_pdeathsig)
        logfile.close()
        self.starts += 1

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.kills += 1
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def stop(self, grace=5.0):
        if not self.alive():
            return
        try:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        except OSError:
            pass


class ClusterMember:
    """A member of scripts/cluster.sh's cluster, with Daemon's interface: the script starts and
    stops it (one source of truth for how each member runs); its pid file tells whether it runs.
    Not our child, so its exit status is unknown."""

    class _Proc:
        def __init__(self, pid):
            self.pid = pid
            self.returncode = None

    def __init__(self, cluster_dir, name, slow, port=None):
        self.cluster_dir = cluster_dir
        self.name = name
        self.slow = slow
        self.port = port
        self.log_path = os.path.join(cluster_dir, "logs", name + ".log")
        self.starts = 1
        self.kills = 0

    def pid(self):
        try:
            with open(os.path.join(self.cluster_dir, "pids", self.name + ".pid")) as f:
                pid, started = f.read().split()
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            # fields[0] is the state; fields[19] the start time (field 22 of stat).
            if fields[0] != "Z" and fields[19] == started:
                return int(pid)
        except (OSError, ValueError, IndexError):
            pass
        return None

    @property
    def proc(self):
        return ClusterMember._Proc(self.pid() or -1)

    def alive(self):
        return self.pid() is not None

    def _script(self, *args):
        result = run([CLUSTER] + list(args), timeout=120 * self.slow, check=False)
        if result.returncode != 0:
            raise HarnessError("scripts/cluster.sh %s failed (exit %d): %s" % (
                " ".join(args), result.returncode, result.stderr.decode(errors="replace")[-2000:]))

    def start(self):
        # Returns once it serves (for an API: once HAProxy has it UP again).
        self._script("start-member", self.cluster_dir, self.name)
        self.starts += 1

    def kill9(self):
        if self.alive():
            self.kills += 1
        self._script("stop-member", self.cluster_dir, self.name, "--kill")

    def stop(self, grace=5.0):
        self._script("stop-member", self.cluster_dir, self.name)
