#!/usr/bin/env python3
"""The browser suite's entry point (CTest's browser_booking_pages): starts the suite's stack once
(a fresh database, the stand-in provider, rocket-rides-api), runs every *_test.py here under
unittest, then stops the stack and fails on what it left behind (sanitizer reports, an API that did
not exit 0, a token in a log). A missing Chromium, chromedriver or python3-selenium fails the run:
it never skips.

Environment: ROCKET_RIDES_BIN_DIR (the build's bin/), DATABASE_URL (scripts/test.sh),
ROCKET_RIDES_BROWSER_SCREENSHOTS and ROCKET_RIDES_BROWSER_LOGS (where the PNGs and the processes'
logs go; CTest puts them under the build directory). Arguments are unittest name patterns (-k)."""

import os
import signal
import sys
import time
import unittest

# The suite's modules are imported from the source tree, which must stay free of build output.
sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
# Starting and stopping the processes is the rrsuite package's (tools/rrsuite), shared with the
# other suites.
sys.path.insert(0, os.path.join(here, "..", "..", "tools"))

try:
    import selenium  # noqa: F401  (first, to fail with a sentence rather than a traceback)
except ImportError as missing:
    print("FAIL: python3-selenium is not installed (scripts/install-deps.sh installs it): %s" % missing,
          file=sys.stderr)
    sys.exit(1)

import browser  # noqa: E402
import suite_stack  # noqa: E402


def _interrupted(signum, _frame):
    # CTest's timeout and a person's kill: stop what the suite started before exiting.
    raise KeyboardInterrupt("signal %d" % signum)


def main(patterns):
    signal.signal(signal.SIGTERM, _interrupted)
    started = time.monotonic()
    loader = unittest.TestLoader()
    if patterns:
        loader.testNamePatterns = ["*%s*" % p for p in patterns]
    tests = loader.discover(here, pattern="*_test.py", top_level_dir=here)
    try:
        stack = suite_stack.start_shared()
    except Exception as error:
        print("FAIL: the browser suite could not start its stack: %s" % error, file=sys.stderr)
        return 1
    try:
        result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(tests)
    finally:
        browser.quit_open_browsers()
        try:
            stack.stop()
            stopped_clean = True
        except AssertionError as problems:
            print("FAIL: %s" % problems, file=sys.stderr)
            stopped_clean = False
    print("screenshots: %s\nlogs: %s\n%.1f s" % (stack.screenshot_dir, stack.log_dir, time.monotonic() - started))
    return 0 if result.wasSuccessful() and result.testsRun > 0 and stopped_clean else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
