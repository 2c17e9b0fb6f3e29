"""What every part of the fault suite shares: where the repository and its scripts are, the log
line format, the two exceptions that end a run (a harness failure, a signal), running a command,
and telling a sanitized binary."""

import os
import subprocess
import sys
import time


FAULT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.abspath(os.path.join(FAULT_DIR, "..", ".."))
# The command line the suite is run by (the replay line names it; the HA profiles run it again
# inside their network namespace).
SCRIPT = os.path.join(FAULT_DIR, "fault_suite.py")
LOCAL_SERVERS = os.path.join(REPO, "scripts", "local-servers.sh")
CLUSTER = os.path.join(REPO, "scripts", "cluster.sh")
STRIPE_KEY = "sk_test_fault_suite"


def clock(t):
    """A time of day to the millisecond, for findings and log lines."""
    return time.strftime("%H:%M:%S", time.localtime(t)) + ("%.3f" % (t % 1))[1:]


def log(message):
    sys.stdout.write("[fault_suite %s] %s\n" % (time.strftime("%H:%M:%S"), message))
    sys.stdout.flush()


class HarnessError(Exception):
    """The harness itself could not run (exit 2): no verdict on the system."""


class Stop(BaseException):
    """Raised in the main thread by SIGINT/SIGTERM so that finally blocks clean up."""


def run(argv, env=None, timeout=120, check=True, capture=True):
    result = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, timeout=timeout,
                            stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                            stderr=subprocess.PIPE if capture else subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise HarnessError("%s failed (exit %d): %s" % (" ".join(argv), result.returncode,
                                                       (result.stderr or b"").decode(errors="replace")[-2000:]))
    return result


def is_sanitized(binary):
    try:
        with open(binary, "rb") as f:
            return b"AddressSanitizer" in f.read()
    except OSError:
        return False
