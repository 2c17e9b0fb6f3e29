"""Debian's headless Chromium driven by chromedriver through python3-selenium, with a profile of its
own that is deleted afterwards, and a screenshot of every page the suite reaches."""

import os
import re
import shutil
import tempfile

from rrsuite.process import HarnessError

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WINDOW = (900, 700)

# Browsers not yet quit: run.py quits them at the end of the run and when it is interrupted (a
# test's own cleanup does not run after SIGTERM or Ctrl-C).
_open_browsers = set()

# One browser for every test of a page-load strategy: starting Chromium under chromedriver took
# about two seconds, eleven times a run, about a third of the suite's time. Each test
# still starts signed out, with no cookie, on a blank page (Browser.begin).
_shared_browsers = {}


def quit_open_browsers():
    for browser in list(_open_browsers):
        browser.quit()
    _shared_browsers.clear()


def browser_for_test(screenshot_dir, log_dir, name, wait_for_navigations=True):
    """The run's browser for this page-load strategy, started at its first test, cleared of every
    cookie, on about:blank, its screenshots named after `name`."""
    browser = _shared_browsers.get(wait_for_navigations)
    if browser is None or browser not in _open_browsers:
        label = "shared" if wait_for_navigations else "shared-no-wait"
        browser = Browser(screenshot_dir, log_dir, label, wait_for_navigations)
        _shared_browsers[wait_for_navigations] = browser
    browser.begin(name)
    return browser


def _selenium():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as error:
        # A browser suite that skips would pass on a machine that checked nothing.
        raise HarnessError("python3-selenium is not installed (scripts/install-deps.sh installs it): %s" % error)
    return webdriver, Service


class Browser:
    def __init__(self, screenshot_dir, log_dir, name, wait_for_navigations=True):
        webdriver, Service = _selenium()
        for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
            if not os.access(path, os.X_OK):
                raise HarnessError("%s is missing: install Debian's %s (scripts/install-deps.sh does)" % (
                    path, package))
        self.screenshot_dir = screenshot_dir
        self.name = name
        self.shots = 0
        self.profile = tempfile.mkdtemp(prefix="rr-browser-profile-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        # "none": chromedriver sends every command at once instead of first waiting for a pending
        # navigation, so a second click can land while the first submission is still loading.
        options.page_load_strategy = "normal" if wait_for_navigations else "none"
        # As root Chromium needs --no-sandbox; /dev/shm in containers is small; the new headless
        # mode is the real browser (the old one was a separate implementation).
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                         "--user-data-dir=" + self.profile, "--window-size=%d,%d" % WINDOW):
            options.add_argument(argument)
        service = Service(CHROMEDRIVER, log_path=os.path.join(log_dir, "chromedriver-%s.log" % name))
        try:
            self.driver = webdriver.Chrome(service=service, options=options)
        except Exception as error:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise HarnessError("Chromium did not start under chromedriver: %s" % error)
        _open_browsers.add(self)
        self.driver.set_page_load_timeout(30)

    def begin(self, name):
        """Ready for a test of its own: screenshots named NAME-01-..., every cookie of every site
        deleted (a session cookie left by the test before would sign this one in), a blank page."""
        self.name = name
        self.shots = 0
        self.driver.get("about:blank")
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        left = self.driver.execute_cdp_cmd("Network.getAllCookies", {}).get("cookies")
        if left:
            raise HarnessError("the browser kept cookies after clearing them: %s" % left)

    def screenshot(self, step):
        """Saves the page now shown as NAME-NN-STEP.png; returns its path."""
        self.shots += 1
        safe = re.sub(r"[^a-z0-9-]+", "-", step.lower()).strip("-")
        path = os.path.join(self.screenshot_dir, "%s-%02d-%s.png" % (self.name, self.shots, safe))
        if not self.driver.save_screenshot(path):
            raise HarnessError("could not save the screenshot %s" % path)
        return path

    def quit(self):
        if self not in _open_browsers:
            return
        _open_browsers.discard(self)
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)
