"""One supervised child process: spawned with its output appended to a log file of its own, waited
for until a readiness probe answers (or it exits, or a timeout passes: either way one line that
names the log), stopped with SIGTERM and then SIGKILL after a grace, and reaped. A child dies with
the thread that spawned it (PR_SET_PDEATHSIG), so a harness killed outright leaves no server on a
port; unless it is started detached: then it runs in a session of its own and outlives the
command that started it (scripts/cluster.sh's members, which later commands find by pid file)."""

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time


class HarnessError(Exception):
    """The suite could not set itself up or run: no verdict on the product."""


_libc = None


def _die_with_parent():
    # Runs in the child before exec. The signal follows the spawning *thread*, hence the
    # main-thread rule in Process.start.
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


# Lines a sanitized binary writes when it found a bug.
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


class Readiness:
    """Waiting until something started answers: for our own children (Process) and for processes
    a script started (cluster.Member), which have alive(), name, log_path, port and proc."""

    def wait_ready(self, probe, what, timeout=30.0, interval=0.05):
        """Returns once probe() is true; raises HarnessError naming the log if the process exits
        first or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                raise HarnessError("%s exited at start (exit %s); its log %s ends: %s" % (
                    self.name, self.proc.returncode, self.log_path, _last_line(self.log_path)))
            try:
                if probe():
                    return self
            except Exception:
                pass
            if time.monotonic() >= deadline:
                raise HarnessError("%s did not %s within %.0f s (log: %s)" % (self.name, what, timeout, self.log_path))
            time.sleep(interval)

    def wait_http(self, path, timeout=30.0, port=None):
        """Returns once GET path on 127.0.0.1:port (default self.port) answers 200."""
        port = port or self.port
        return self.wait_ready(lambda: http_status(port, path) == 200, "answer GET %s on port %d" % (path, port),
                               timeout)


def _last_line(path, size=4000):
    """The log's last line that says something (so that the error stays one line)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - size))
            lines = [line.strip() for line in f.read().decode(errors="replace").splitlines() if line.strip()]
        return lines[-1] if lines else "(nothing)"
    except OSError:
        return "(no log)"


class Process(Readiness):
    """A binary started with its own environment; restartable (each start appends to the same log
    under a header line). `port` is the caller's note of where it listens, if anywhere."""

    def __init__(self, name, argv, env, log_dir, port=None, detached=False, header=None):
        """detached: a session of its own and no PR_SET_PDEATHSIG (see the module's docstring).
        header: the line written to the log before each start ("" for none), else "==== start N
        at TIME ===="."""
        self.name = name
        self.detached = detached
        self.header = header
        self.argv = list(argv)
        self.env = env
        self.log_path = os.path.join(log_dir, name + ".log")
        self.port = port
        self.proc = None
        self.starts = 0
        self.kills = 0

    def start(self):
        # PR_SET_PDEATHSIG fires when the spawning thread ends: only the main thread lives as
        # long as the harness.
        assert self.detached or threading.current_thread() is threading.main_thread(), \
            "spawn children from the main thread"
        header = self.header
        if header is None:
            header = "\n==== start %d at %s ====" % (self.starts + 1, time.strftime("%H:%M:%S"))
        with open(self.log_path, "ab") as log:
            if header:
                log.write((header + "\n").encode())
                log.flush()
            if self.detached:
                self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
            else:
                self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        self.starts += 1
        return self

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

    def stop(self, grace=15.0):
        """SIGTERM, then SIGKILL after `grace` seconds; reaps it and returns the exit status (None
        if never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
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
        return self.proc.returncode

    def log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def log_text(self, since=0):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def sanitizer_findings(self):
        return [line for line in self.log_text().splitlines() if any(m in line for m in SANITIZER_MARKERS)]


def print_tail(path, lines=20):
    """The last `lines` lines of a log, to stderr (what a failure shows); nothing if it is empty or
    unreadable."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return
    if text:
        sys.stderr.write("\n".join(text) + "\n")
        sys.stderr.flush()


def stop_all(processes):
    """Stops each (in the order given) and returns the problems, one line each: an exit status
    other than 0, a line of a sanitizer report."""
    problems = []
    for p in processes:
        if p is None:
            continue
        status = p.stop()
        if status != 0:
            problems.append("%s exited %s (log: %s)" % (p.name, status, p.log_path))
        problems += ["%s: %s" % (p.name, line) for line in p.sanitizer_findings()]
    return problems


def http_status(port, path, host="127.0.0.1", timeout=2.0):
    """The status of GET path, or 0 when nothing answers."""
    return http_get(port, path, host, timeout)[0]


def http_get(port, path, host="127.0.0.1", timeout=2.0):
    """GET path: (status, body as text), or (0, "") when nothing answers."""
    import http.client
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    except (OSError, http.client.HTTPException):
        return 0, ""
    finally:
        conn.close()


def run(argv, env=None, timeout=120, check=True, capture=True):
    """Runs a command to completion (stdin closed); with `check`, a non-zero exit raises
    HarnessError with the end of its stderr."""
    result = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, timeout=timeout,
                            stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                            stderr=subprocess.PIPE if capture else subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise HarnessError("%s failed (exit %d): %s" % (" ".join(argv), result.returncode,
                                                       (result.stderr or b"").decode(errors="replace")[-2000:]))
    return result


def command_lines():
    """(pid, argv as a list of bytes) of every process there is; one that ends meanwhile is left
    out."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                yield int(entry), f.read().split(b"\0")[:-1]
        except OSError:
            continue


def guard(command, directory, marker):
    """A guardian outside our process tree: once this process is gone (killed outright, say by
    CTest's timeout), it runs `command... directory` to stop what that command started there, if
    directory/marker still exists. setsid -f forks, so the guardian is nobody's child and a kill of
    our process tree does not reach it."""
    subprocess.run(
        ["setsid", "-f", "sh", "-c",
         'while kill -0 "$1" 2>/dev/null; do sleep 1; done; '
         '[ -f "$3/$4" ] && "$2" stop "$3" >/dev/null 2>&1; exit 0',
         "guardian", str(os.getpid()), command, directory, marker],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
