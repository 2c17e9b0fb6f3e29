"""Everything the browser suite runs against, started for itself by rrsuite's plain shape: a fresh
database, the stand-in provider and rocket-rides-api from the build directory; riders made with
`user create`; all of it stopped at the end, and the processes' exit statuses and sanitizer reports
checked then."""

import collections
import os
import secrets
import shutil

from rrsuite.plain import PlainStack
from rrsuite.process import HarnessError

from api_server import ApiServer
from ledger import Ledger
from stand_in_provider import STRIPE_KEY, StandInProvider

Rider = collections.namedtuple("Rider", "email customer token user_id")


def _output_dir(variable, default_name):
    path = os.environ.get(variable) or os.path.join(os.getcwd(), default_name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


class SuiteStack:
    def __init__(self):
        self.bin_dir = os.environ.get("ROCKET_RIDES_BIN_DIR", "")
        self.screenshot_dir = _output_dir("ROCKET_RIDES_BROWSER_SCREENSHOTS", "browser-screenshots")
        self.log_dir = _output_dir("ROCKET_RIDES_BROWSER_LOGS", "browser-logs")
        self.stopped = False
        self.plain = PlainStack(self.bin_dir, os.environ.get("DATABASE_URL", ""), self.log_dir, STRIPE_KEY,
                                db_prefix="rr_browser_")
        self.database = self.plain.database
        self.provider = StandInProvider(self.plain.provider)
        self.api = ApiServer(self.plain)
        self.ledger = Ledger(self.database, self.provider)
        self.tokens = []

    def new_rider(self, label, declines=False):
        """A rider of its own for one test, so the rider's totals are that test's alone; a customer
        id containing "declined" makes the stand-in decline every charge."""
        suffix = secrets.token_hex(4)
        email = "browser-%s-%s@example.com" % (label, suffix)
        customer = "cus_browser_%s_%s%s" % (label.replace("-", "_"), "declined_" if declines else "", suffix)
        token = self.api.create_rider(email, customer)
        self.tokens.append(token)
        return Rider(email, customer, token, self.ledger.user_id(email))

    def stop(self, check=True):
        """Stops what was started; with `check`, fails on a sanitizer report, an API that did not
        exit 0, or an API token written to a log."""
        if self.stopped:
            return
        self.stopped = True
        problems = self.plain.stop()
        text = self.api.process.log_text()
        problems += ["an API token is in the API's log: %s..." % t[:11] for t in self.tokens if t in text]
        if check and problems:
            raise AssertionError("after the suite:\n" + "\n".join(problems))


_shared = None


def shared():
    """The one stack of this run (run.py starts it before the first test and stops it after the
    last)."""
    if _shared is None:
        raise HarnessError("the suite stack is not started: run tests/browser/run.py")
    return _shared


def start_shared():
    global _shared
    _shared = SuiteStack()
    return _shared
