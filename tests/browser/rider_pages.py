"""The rider pages by the names a rider's browser sees (element ids, form fields, routes), driven in the
browser, and the same forms posted raw with the browser's cookies. Nothing here knows how the
pages are built: only what a rider sees and what the browser sends."""

import collections
import http.client
import urllib.parse

from selenium.common.exceptions import (NoSuchElementException, StaleElementReferenceException, TimeoutException,
                                        WebDriverException)
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# What a page after a submission is, told by the one element each kind of page carries.
OUTCOME_MARKERS = (
    ("ride", "article#ride"),
    ("declined", "p#declined"),
    ("try-again", "p#try-again"),
    ("error", "p#error"),
    # Not in the contract: what a second submission sees while the first runs, until POST /book
    # waits instead (the bounded wait). Named here so that a failure says so.
    ("in-progress", "p#in-progress"),
    ("booking-form", "form#book"),
    ("sign-in", "form#sign-in"),
)

def _is_current(element):
    """Whether the element still belongs to the document shown (False once it was replaced)."""
    try:
        element.is_enabled()
        return True
    except StaleElementReferenceException:
        return False


def _wait(driver, timeout, condition):
    # While a navigation commits, chromedriver may answer with an inspector error ("Node ... does
    # not belong to the document") rather than a stale element: asked again, it settles.
    wait = WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=(WebDriverException,))
    return wait.until(condition)


Page = collections.namedtuple("Page", "kind path text ride_id")
RawAnswer = collections.namedtuple("RawAnswer", "status location headers body")


class RiderPages:
    def __init__(self, browser, origin):
        self.browser = browser
        self.driver = browser.driver
        self.origin = origin

    # -- reading the page shown ---------------------------------------------------------------

    def _first(self, css):
        found = self.driver.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found else None

    def current(self):
        """What the page now shown is, by its marker (the first of OUTCOME_MARKERS it carries)."""
        path = urllib.parse.urlsplit(self.driver.current_url).path
        for kind, css in OUTCOME_MARKERS:
            element = self._first(css)
            if element is not None:
                ride_id = element.get_attribute("data-ride-id") if kind == "ride" else None
                return Page(kind, path, element.text, ride_id)
        return Page("unknown", path, self.driver.find_element(By.TAG_NAME, "body").text[:500], None)

    def wait_for_new_page(self, old_root, timeout=30):
        """Waits until the document `old_root` belonged to is replaced and the new one shows one of
        the markers; returns current()."""
        try:
            _wait(self.driver, timeout, lambda d: not _is_current(old_root))
            _wait(self.driver, timeout, lambda d: d.execute_script("return document.readyState") == "complete" and
                  self.current().kind != "unknown")
        except TimeoutException:
            self._screenshot(self.current())
            raise AssertionError("no new page within %d s; showing %s" % (timeout, self.current())) from None
        return self._screenshot(self.current())

    def _screenshot(self, page):
        # Every page the rider reaches, named for what it is, in the order reached.
        self.browser.screenshot(page.kind if page.kind != "unknown" else "unknown-" + page.path)
        return page

    def form_fields(self, form_id="book"):
        """Every named input of the form as the browser would send it."""
        form = self.driver.find_element(By.ID, form_id)
        return {element.get_attribute("name"): element.get_attribute("value") or ""
                for element in form.find_elements(By.CSS_SELECTOR, "input[name]")}

    def recent_ride_ids(self):
        return [li.get_attribute("data-ride-id")
                for li in self.driver.find_elements(By.CSS_SELECTOR, "ul#recent-rides li[data-ride-id]")]

    def ride_details(self):
        """The ride page's ride id, charge id and amount text."""
        article = self.driver.find_element(By.CSS_SELECTOR, "article#ride")
        return {"ride_id": article.get_attribute("data-ride-id"),
                "charge_id": self.driver.find_element(By.ID, "charge-id").text.strip(),
                "amount": self.driver.find_element(By.ID, "amount").text.strip()}

    def session_cookie(self):
        return next((c for c in self.driver.get_cookies() if c["name"] == "rr_session"), None)

    def cookie_header(self):
        return "; ".join("%s=%s" % (c["name"], c["value"]) for c in self.driver.get_cookies())

    # -- acting as the rider --------------------------------------------------------------------

    def open(self, path="/"):
        # A fresh session (page load strategy "none") may still be loading its blank first page,
        # with no document element yet: then the new page is told by its address instead.
        try:
            root = self._root()
        except NoSuchElementException:
            root = None
        self.driver.get(self.origin + path)
        # With chromedriver's page load strategy "none" the command returns before the page loads.
        try:
            _wait(self.driver, 30,
                  lambda d: (not _is_current(root) if root is not None else d.current_url.startswith(self.origin))
                  and d.execute_script("return document.readyState") == "complete")
        except TimeoutException:
            raise AssertionError("GET %s did not load within 30 s" % path) from None
        return self._screenshot(self.current())

    def _root(self):
        return self.driver.find_element(By.TAG_NAME, "html")

    def sign_in(self, token):
        page = self.open("/")
        try:
            field = self.driver.find_element(By.CSS_SELECTOR, "form#sign-in input[name=token]")
        except NoSuchElementException:
            raise AssertionError("GET / shows no sign-in form: %s" % (page,)) from None
        field.send_keys(token)
        root = self._root()
        self.driver.find_element(By.ID, "sign-in-submit").click()
        return self.wait_for_new_page(root)

    def set_coordinates(self, **values):
        for name, value in values.items():
            field = self.driver.find_element(By.CSS_SELECTOR, "form#book input[name=%s]" % name)
            field.clear()
            field.send_keys(value)

    def book(self):
        """Clicks the booking form's submit button once; returns the page it ends on."""
        root = self._root()
        self.driver.find_element(By.ID, "book-submit").click()
        return self.wait_for_new_page(root)

    def book_with_two_clicks(self, gap_seconds):
        """Two trusted mouse clicks on the submit button, `gap_seconds` apart, sent as one action
        sequence (no wait for the first submission's page in between). The pointer aims at the
        button's coordinates: a reference to the button element itself goes stale in chromedriver
        once the first submission's navigation starts. Needs a Browser that does not wait for
        navigations."""
        root = self._root()
        button = self.driver.find_element(By.ID, "book-submit")
        x, y = self.driver.execute_script(
            "const r = arguments[0].getBoundingClientRect();"
            "return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)];", button)
        actions = ActionBuilder(self.driver)
        actions.pointer_action.move_to_location(x, y).click().pause(gap_seconds).click()
        actions.perform()
        return self.wait_for_new_page(root)

    def back(self):
        root = self._root()
        self.driver.back()
        return self.wait_for_new_page(root)

    def sign_out(self):
        root = self._root()
        self.driver.find_element(By.ID, "sign-out-submit").click()
        return self.wait_for_new_page(root)

    # -- the same forms, posted raw -------------------------------------------------------------

    def post_form(self, path, fields, cookie_header=None):
        """POSTs the fields as the browser would (form encoding, its cookies, its Origin) and
        returns the answer as it is, without following a redirect."""
        conn = http.client.HTTPConnection(urllib.parse.urlsplit(self.origin).hostname,
                                          urllib.parse.urlsplit(self.origin).port, timeout=30)
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": self.origin}
        if cookie_header:
            headers["Cookie"] = cookie_header
        try:
            conn.request("POST", path, body=urllib.parse.urlencode(fields), headers=headers)
            response = conn.getresponse()
            body = response.read().decode(errors="replace")
            return RawAnswer(response.status, response.getheader("Location"), dict(response.getheaders()), body)
        finally:
            conn.close()

    def get_raw(self, path, cookie_header=None):
        conn = http.client.HTTPConnection(urllib.parse.urlsplit(self.origin).hostname,
                                          urllib.parse.urlsplit(self.origin).port, timeout=30)
        try:
            conn.request("GET", path, headers={"Cookie": cookie_header} if cookie_header else {})
            response = conn.getresponse()
            body = response.read().decode(errors="replace")
            return RawAnswer(response.status, response.getheader("Location"), dict(response.getheaders()), body)
        finally:
            conn.close()
