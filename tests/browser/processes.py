"""Child processes of the browser suite: started with their own environment and log file, stopped
(and their sanitizer reports read) when the suite ends, whether it passed or not."""

import ctypes
import http.client
import os
import random
import signal
import socket
import subprocess
import time


class HarnessError(Exception):
    """The suite could not set itself up: not a finding about the product."""


_libc = None


def _die_with_parent():
    # Runs in the child before exec: a harness killed outright (CTest's timeout) takes its
    # children with it instead of leaving an API on a port.
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


_taken_ports = set()


def free_port():
    """A free loopback port below the kernel's ephemeral range, so that no outgoing connection can
    take it between this check and the server's bind."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(10000, max(10001, low))
        if port in _taken_ports:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _taken_ports.add(port)
        return port
    raise HarnessError("no free loopback port below %d" % low)


# Lines a sanitized binary writes when it found a bug; any of them fails the suite.
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


class ChildProcess:
    """One binary of the build, its output in log_dir/name.log."""

    def __init__(self, name, argv, env, log_dir):
        self.name = name
        self.argv = argv
        self.env = env
        self.log_path = os.path.join(log_dir, name + ".log")
        self.proc = None

    def start(self):
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace=15.0):
        """SIGTERM, then SIGKILL after `grace` seconds; returns the exit status (None if never
        started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
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

    def wait_http(self, port, path, timeout=30.0):
        """Returns once GET path answers 200; fails if the process exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise HarnessError("%s exited at start (exit %s); its log %s:\n%s" % (
                    self.name, self.proc.returncode, self.log_path, self.log_text()[-3000:]))
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                try:
                    conn.request("GET", path)
                    if conn.getresponse().status == 200:
                        return
                finally:
                    conn.close()
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        raise HarnessError("%s did not answer GET %s on port %d within %.0f s" % (self.name, path, port, timeout))


def run(argv, env, timeout=120):
    """Runs a command to completion; its stdout, or a HarnessError with its stderr."""
    result = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, timeout=timeout)
    if result.returncode != 0:
        raise HarnessError("%s failed (exit %d): %s" % (" ".join(argv), result.returncode,
                                                       result.stderr.decode(errors="replace")[-2000:]))
    return result.stdout.decode()
