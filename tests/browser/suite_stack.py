"""Everything the browser suite runs against, started for itself: a fresh database, the stand-in
provider and rocket-rides-api from the build directory; riders made with `user create`; all of it
stopped at the end, and the API's exit status and sanitizer reports checked then."""

import collections
import os
import secrets
import shutil

from api_server import ApiServer
from database import FreshDatabase
from ledger import Ledger
from processes import HarnessError
from stand_in_provider import StandInProvider

Rider = collections.namedtuple("Rider", "email customer token user_id")

# Settings of the suite's own processes; everything else comes from the caller's environment
# (ASAN_OPTIONS, LSAN_OPTIONS, PATH).
_OWNED_PREFIXES = ("DATABASE_", "REDIS_", "STRIPE_", "IDEMPOTENCY_", "MOCK_", "API_", "PORT", "METRICS_",
                   "SESSION_", "SHUTDOWN_", "RESPONSE_CACHE_", "TOKEN_CACHE_", "LISTEN_", "LOCAL_SERVERS")


def _output_dir(variable, default_name):
    path = os.environ.get(variable) or os.path.join(os.getcwd(), default_name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


class SuiteStack:
    def __init__(self):
        self.bin_dir = os.environ.get("ROCKET_RIDES_BIN_DIR", "")
        for binary in ("rocket-rides-api", "rocket-rides-stripe-mock"):
            if not os.access(os.path.join(self.bin_dir, binary), os.X_OK):
                raise HarnessError("%s not found in ROCKET_RIDES_BIN_DIR=%r (build first; CTest sets it)" % (
                    binary, self.bin_dir))
        self.screenshot_dir = _output_dir("ROCKET_RIDES_BROWSER_SCREENSHOTS", "browser-screenshots")
        self.log_dir = _output_dir("ROCKET_RIDES_BROWSER_LOGS", "browser-logs")
        self.api = self.provider = self.database = None
        self.stopped = False
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(_OWNED_PREFIXES)}
        try:
            self.database = FreshDatabase()
            self.provider = StandInProvider(self.bin_dir, base_env, self.log_dir)
            self.api = ApiServer(self.bin_dir, base_env, self.database, self.provider, self.log_dir)
        except BaseException:
            self.stop(check=False)
            raise
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
        problems = []
        for name, part in (("rocket-rides-api", self.api), ("rocket-rides-stripe-mock", self.provider)):
            if part is None:
                continue
            status = part.stop()
            if status != 0:
                problems.append("%s exited %s (log: %s)" % (name, status, part.process.log_path))
            problems += ["%s: %s" % (name, line) for line in part.process.sanitizer_findings()]
        if self.api is not None:
            text = self.api.process.log_text()
            problems += ["an API token is in the API's log: %s..." % t[:11] for t in self.tokens if t in text]
        if self.database is not None:
            self.database.drop()
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
