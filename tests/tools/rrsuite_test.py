#!/usr/bin/env python3
"""The suites' process supervisor (tools/rrsuite/process.py) on real processes, no servers: a
child that never becomes ready fails the wait in one line naming its log; one that exits at start
is told apart; one that ignores SIGTERM is killed after the grace and reaped; readiness over HTTP
is seen; and a child dies with the harness (PR_SET_PDEATHSIG), unless it was started detached
(scripts/cluster.sh's members, which outlive the command line that started them)."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

from rrsuite.ports import free_port  # noqa: E402  (importable only once the path above is in place)
from rrsuite.process import HarnessError, Process  # noqa: E402


def python_with_process(body):
    """A Python of its own (a harness, a command line) that runs BODY with rrsuite's Process,
    os, sys and time imported."""
    tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
    return [sys.executable, "-c",
            "import sys, os, time; sys.path.insert(0, %r); sys.dont_write_bytecode = True\n"
            "from rrsuite.process import Process\n" % tools + body]


class Supervisor(unittest.TestCase):
    def setUp(self):
        self.log_dir = tempfile.mkdtemp(prefix="rrsuite-test-")
        self.addCleanup(shutil.rmtree, self.log_dir, True)

    def process(self, name, script):
        p = Process(name, [sys.executable, "-c", script], dict(os.environ), self.log_dir)
        self.addCleanup(p.stop, 1.0)
        return p.start()

    def test_a_child_never_ready_fails_the_wait_in_one_line_naming_its_log(self):
        p = self.process("sleeper", "import time; print('sleeping', flush=True); time.sleep(60)")
        started = time.monotonic()
        with self.assertRaises(HarnessError) as caught:
            p.wait_ready(lambda: False, "become ready", timeout=0.5)
        self.assertLess(time.monotonic() - started, 30)
        message = str(caught.exception)
        self.assertNotIn("\n", message)
        self.assertIn("sleeper did not become ready within", message)
        self.assertIn(p.log_path, message)

    def test_a_child_that_exits_at_start_is_named_with_its_status_and_last_words(self):
        p = self.process("quitter", "import sys; print('no DATABASE_URL', flush=True); sys.exit(3)")
        with self.assertRaises(HarnessError) as caught:
            p.wait_ready(lambda: False, "become ready", timeout=60)
        message = str(caught.exception)
        self.assertNotIn("\n", message)
        self.assertIn("quitter exited at start (exit 3)", message)
        self.assertIn("no DATABASE_URL", message)

    def test_a_child_deaf_to_sigterm_is_killed_after_the_grace_and_reaped(self):
        p = self.process("deaf", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 "print('ready', flush=True); time.sleep(60)")
        p.wait_ready(lambda: "ready" in p.log_text(), "say ready", timeout=30)
        started = time.monotonic()
        status = p.stop(grace=0.5)
        self.assertEqual(status, -9, "killed by SIGKILL after SIGTERM was ignored")
        self.assertGreaterEqual(time.monotonic() - started, 0.5)
        self.assertFalse(p.alive())
        self.assertFalse(os.path.exists("/proc/%d" % p.proc.pid), "reaped, not a zombie")

    def test_readiness_over_http_and_a_clean_stop(self):
        port = free_port()
        p = Process("web", [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                    dict(os.environ), self.log_dir, port=port)
        self.addCleanup(p.stop, 1.0)
        p.start().wait_http("/", timeout=30)
        self.assertEqual(p.stop(), -15, "stopped by SIGTERM")
        self.assertEqual(p.starts, 1)

    def test_a_child_dies_with_the_harness(self):
        # A harness (a Python of its own) starts a sleeper through Process and is killed outright;
        # the sleeper must not outlive it.
        harness = subprocess.Popen(
            python_with_process("p = Process('orphan', ['sleep', '60'], dict(os.environ), %r).start()\n"
                                "print(p.proc.pid, flush=True); time.sleep(60)" % self.log_dir),
            stdout=subprocess.PIPE)
        child = int(harness.stdout.readline())
        harness.stdout.close()
        harness.kill()
        harness.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.path.exists("/proc/%d" % child):
            with open("/proc/%d/stat" % child) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break  # dead, waiting for init to reap it
            time.sleep(0.05)
        else:
            if os.path.exists("/proc/%d" % child):
                self.fail("the child %d outlived its harness" % child)

    def test_a_detached_child_outlives_the_command_that_started_it(self):
        # A command line (a Python of its own) starts a sleeper detached and exits; the sleeper
        # runs on, in a session of its own, with the header the caller chose in its log.
        result = subprocess.run(
            python_with_process("p = Process('member', ['sleep', '60'], dict(os.environ), %r, detached=True,\n"
                                "            header='==== member started ====').start()\n"
                                "print(p.proc.pid, flush=True)" % self.log_dir),
            stdout=subprocess.PIPE, timeout=30)
        child = int(result.stdout.decode().strip())
        self.addCleanup(lambda: os.path.exists("/proc/%d" % child) and os.kill(child, 9))
        time.sleep(0.5)
        with open("/proc/%d/stat" % child) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        self.assertNotEqual(fields[0], "Z", "the detached child died with the command that started it")
        self.assertEqual(int(fields[3]), child, "the detached child leads a session of its own")
        with open(os.path.join(self.log_dir, "member.log")) as f:
            self.assertEqual(f.readline(), "==== member started ====\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
