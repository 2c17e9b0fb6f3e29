"""What every part of the fault suite shares: where the repository and its scripts are, the log
line format, the two exceptions that end a run (a harness failure, a signal), running a command,
and telling a sanitized binary."""

import os
import sys
import time

from rrsuite.daemons import is_sanitized  # noqa: F401  (re-exported for the harness's modules)
from rrsuite.paths import CLUSTER, REPO  # noqa: F401
from rrsuite.process import HarnessError, run  # noqa: F401


FAULT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The command line the suite is run by (the replay line names it; the HA profiles run it again
# inside their network namespace).
SCRIPT = os.path.join(FAULT_DIR, "fault_suite.py")
STRIPE_KEY = "sk_test_fault_suite"


def clock(t):
    """A time of day to the millisecond, for findings and log lines."""
    return time.strftime("%H:%M:%S", time.localtime(t)) + ("%.3f" % (t % 1))[1:]


def log(message):
    sys.stdout.write("[fault_suite %s] %s\n" % (time.strftime("%H:%M:%S"), message))
    sys.stdout.flush()


class Stop(BaseException):
    """Raised in the main thread by SIGINT/SIGTERM so that finally blocks clean up."""
