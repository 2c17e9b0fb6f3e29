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

# Browsers not yet quit: run.py quits them when the run is interrupted (a test's own cleanup does
# not run after SIGTERM or Ctrl-C).
_open_browsers = set()


def quit_open_browsers():
    for browser in list(_open_browsers):
        browser.quit()


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
