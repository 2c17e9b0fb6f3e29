"""The rider pages in a real browser: Debian's headless Chromium, driven by python3-selenium, signs in,
books rides and submits the booking form every way a person can (twice in a double click, two
raw POSTs of the same form racing, back and again, a declined card, a provider outage and a retry)
against the real API, database and stand-in provider. After each: exactly one ride and one charge
per hidden key, and every submission of a key ended on the same ride page. Every page reached is
saved as a PNG (ROCKET_RIDES_BROWSER_SCREENSHOTS).

Run by run.py (CTest's browser_booking_pages).
"""

import threading
import unittest

from browser import browser_for_test
from ledger import dollars
from rider_pages import RiderPages
from suite_stack import shared

# While the first submission of a key waits on the provider this long, the second one surely
# arrives with the key in flight: the case the bounded wait is for.
SLOW_PROVIDER_MS = 800

# The headers every page carries (the contract's exact values).
PAGE_HEADERS = {
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
CSP_DIRECTIVES = ("default-src 'none'", "img-src 'self'", "form-action 'self'", "frame-ancestors 'none'",
                  "base-uri 'none'")


class RiderTestCase(unittest.TestCase):
    """A rider of its own, the run's browser cleared of cookies and the pages' helpers for each test."""

    declines = False
    wait_for_navigations = True

    def setUp(self):
        self.stack = shared()
        label = self._testMethodName.replace("test_", "", 1).replace("_", "-")
        if len(label) > 36:
            label = label[:36].rsplit("-", 1)[0]
        self.rider = self.stack.new_rider(label[:20], declines=self.declines)
        self.browser = browser_for_test(self.stack.screenshot_dir, self.stack.log_dir, label,
                                        self.wait_for_navigations)
        self.pages = RiderPages(self.browser, self.stack.api.origin)
        self.api_log_offset = self.stack.api.log_offset()

    def sign_in(self):
        page = self.pages.sign_in(self.rider.token)
        self.assertEqual(page.kind, "booking-form", "signing in with the rider's token: %s" % (page,))
        return page

    def book_statuses(self, expected, timeout=3.0):
        """The statuses of every POST /book the API logged in this test, in the order answered
        (waiting up to `timeout` for at least `expected` of them)."""
        return [int(r["status"]) for r in
                self.stack.api.requests_since(self.api_log_offset, "POST", "/book", expected, timeout)]

    def assert_paid_ride_page(self, page, hidden_key):
        """The page is the ride page of the key's one paid ride, showing its charge and amount."""
        self.assertEqual(page.kind, "ride", "expected the ride page, got %s" % (page,))
        paid = self.stack.ledger.paid_ride(self.rider.user_id, self.rider.customer, hidden_key)
        self.assertEqual(page.path, "/my/rides/%s" % paid["ride_id"])
        self.assertEqual(page.ride_id, paid["ride_id"])
        details = self.pages.ride_details()
        self.assertEqual(details["charge_id"], paid["charge_id"])
        self.assertEqual(details["amount"], dollars(paid["amount"], paid["currency"]))
        return paid

    def assert_form_is_fresh(self, fields):
        self.assertTrue(fields.get("idempotency_key"), "the booking form has a hidden idempotency_key: %s" % fields)
        self.assertTrue(fields.get("csrf_token"), "the booking form has a hidden csrf_token: %s" % fields)
        for name in ("origin_lat", "origin_lon", "target_lat", "target_lon"):
            float(fields[name])  # prefilled with a number


class SigningInAndOut(RiderTestCase):
    def sessions_of_rider(self):
        return len(self.stack.database.rows("SELECT 1 FROM rider_sessions WHERE user_id = %d" % self.rider.user_id))

    def test_sign_in_refuses_a_wrong_token_then_takes_the_rider_s_own(self):
        page = self.pages.open("/")
        self.assertEqual(page.kind, "sign-in", "GET / signed out shows the sign-in form: %s" % (page,))
        answer = self.pages.get_raw("/")
        self.assertEqual(answer.status, 200)
        for name, value in PAGE_HEADERS.items():
            self.assertEqual(answer.headers.get(name), value, name)
        csp = answer.headers.get("Content-Security-Policy", "")
        for directive in CSP_DIRECTIVES:
            self.assertIn(directive, csp)
        self.assertNotIn("<script", answer.body.lower())

        page = self.pages.sign_in("rr_" + "0" * 64)
        self.assertEqual(page.kind, "error", "a wrong token shows an error: %s" % (page,))
        self.assertIsNone(self.pages.session_cookie(), "no session for a wrong token")
        self.assertTrue(self.pages.driver.find_elements("css selector", "form#sign-in"), "the sign-in form again")

        self.sign_in()
        cookie = self.pages.session_cookie()
        self.assertIsNotNone(cookie, "signed in: the rr_session cookie")
        self.assertTrue(cookie["httpOnly"])
        self.assertEqual(cookie.get("sameSite"), "Strict")
        self.assertEqual(cookie["path"], "/")
        self.assertNotIn(self.rider.token, self.pages.driver.page_source, "the API token is never in a page")
        self.assertNotIn(self.rider.token, cookie["value"])
        sessions = [int(r["status"]) for r in self.stack.api.requests_since(self.api_log_offset, "POST", "/session", 2)]
        self.assertEqual(sessions, [401, 303])

    def test_sign_out_ends_the_session_in_the_browser_and_on_the_server(self):
        self.sign_in()
        self.assertEqual(self.sessions_of_rider(), 1, "signing in stores one session")
        old_cookie = self.pages.cookie_header()
        fields = self.pages.form_fields()
        page = self.pages.sign_out()
        self.assertEqual(page.kind, "sign-in", "signing out shows the sign-in form: %s" % (page,))
        self.assertIsNone(self.pages.session_cookie(), "the rr_session cookie is gone")
        self.assertEqual(self.sessions_of_rider(), 0, "signing out deletes the session row")
        self.assertEqual(self.pages.open("/").kind, "sign-in")
        # The old cookie, sent again by someone who kept it, is worth nothing.
        again = self.pages.get_raw("/", old_cookie)
        self.assertIn('id="sign-in"', again.body)
        self.assertNotIn('id="book"', again.body)
        refused = self.pages.post_form("/book", fields, old_cookie)
        self.assertEqual(refused.status, 403, refused.body[:500])
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=0, charges=0)


class BookingARide(RiderTestCase):
    def test_booking_lands_on_the_ride_page_with_its_charge(self):
        self.sign_in()
        fields = self.pages.form_fields()
        self.assert_form_is_fresh(fields)
        page = self.pages.book()
        paid = self.assert_paid_ride_page(page, fields["idempotency_key"])
        self.assertEqual(self.book_statuses(1), [303])
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=1, charges=1)

        page = self.pages.open("/")
        self.assertEqual(page.kind, "booking-form")
        self.assertNotEqual(self.pages.form_fields()["idempotency_key"], fields["idempotency_key"],
                            "a new key at every render")
        self.assertIn(paid["ride_id"], self.pages.recent_ride_ids())

    def test_back_and_submit_again_lands_on_the_same_ride(self):
        self.sign_in()
        key = self.pages.form_fields()["idempotency_key"]
        first = self.assert_paid_ride_page(self.pages.book(), key)
        page = self.pages.back()
        self.assertEqual(page.kind, "booking-form", "back from the ride page: %s" % (page,))
        self.assertEqual(self.pages.form_fields()["idempotency_key"], key,
                         "back shows the form as it was submitted, with its key")
        page = self.pages.book()
        self.assertEqual(self.assert_paid_ride_page(page, key), first)
        self.assertEqual(self.book_statuses(2), [303, 303])
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=1, charges=1)

    def test_bad_coordinates_redisplay_the_form_with_the_same_key(self):
        self.sign_in()
        key = self.pages.form_fields()["idempotency_key"]
        self.pages.set_coordinates(origin_lat="123.5")
        page = self.pages.book()
        self.assertEqual(page.kind, "error", "bad coordinates show an error: %s" % (page,))
        self.assertTrue(page.text.strip(), "the error says what is wrong")
        fields = self.pages.form_fields()
        self.assertEqual(fields["idempotency_key"], key, "the same hidden key")
        self.assertEqual(fields["origin_lat"], "123.5", "the values entered")
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=0, charges=0)

        self.pages.set_coordinates(origin_lat="37.7749")
        page = self.pages.book()
        self.assert_paid_ride_page(page, key)
        self.assertEqual(self.book_statuses(2), [422, 303])
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=1, charges=1)


class SubmittingTwice(RiderTestCase):
    """Two submissions of one form while the first is still in flight: both need the bounded wait
    (`Prefer: wait` semantics on POST /book), without it the second one answers 409."""

    # The second click must reach the page while the first submission is still loading.
    wait_for_navigations = False

    def setUp(self):
        super().setUp()
        self.stack.provider.configure(latency_ms=SLOW_PROVIDER_MS)
        self.addCleanup(self.stack.provider.configure, latency_ms=0)

    def test_a_double_click_on_submit_books_one_ride(self):
        # A quick person's double click: the second click 100 ms after the first, when the first
        # submission is at the API, waiting on the provider.
        self.sign_in()
        key = self.pages.form_fields()["idempotency_key"]
        page = self.pages.book_with_two_clicks(0.1)
        self.assert_paid_ride_page(page, key)
        statuses = self.book_statuses(2)
        self.assertEqual(len(statuses), 2, "the double click submitted the form twice: %s" % statuses)
        self.assertEqual(statuses, [303, 303], "both submissions of the key answered with its ride page")
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=1, charges=1)

    def test_two_clicks_as_fast_as_the_browser_allows_book_one_ride(self):
        # Back to back, Chromium may fold both clicks into one submission (the second replaces the
        # first before its request leaves) or send both: either way, one ride.
        self.sign_in()
        key = self.pages.form_fields()["idempotency_key"]
        page = self.pages.book_with_two_clicks(0)
        self.assert_paid_ride_page(page, key)
        statuses = self.book_statuses(2, timeout=1.5)
        self.assertIn(len(statuses), (1, 2), statuses)
        self.assertEqual(statuses, [303] * len(statuses), "every submission of the key answered with its ride page")
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=1, charges=1)

    def test_two_raw_posts_of_one_form_racing_get_the_same_ride(self):
        self.sign_in()
        fields = self.pages.form_fields()
        cookies = self.pages.cookie_header()
        start = threading.Barrier(2)
        answers = [None, None]

        def submit(index):
            start.wait()
            answers[index] = self.pages.post_form("/book", fields, cookies)

        threads = [threading.Thread(target=submit, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual([a.status for a in answers], [303, 303], [a.body[:300] for a in answers])
        self.assertEqual(answers[0].location, answers[1].location, "both submissions end on the same ride page")
        page = self.pages.open(answers[0].location)
        self.assert_paid_ride_page(page, fields["idempotency_key"])
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=1, charges=1)


class WhenTheCardOrTheProviderFails(RiderTestCase):
    def test_a_provider_outage_asks_to_try_again_and_the_retry_books_one_ride(self):
        self.sign_in()
        key = self.pages.form_fields()["idempotency_key"]
        injected = self.stack.provider.stats()["failures_injected"]
        self.stack.provider.configure(fail_next=1)
        self.addCleanup(self.stack.provider.configure, fail_next=0)
        page = self.pages.book()
        self.assertEqual(page.kind, "try-again", "a provider outage asks to try again: %s" % (page,))
        self.assertEqual(self.stack.provider.stats()["failures_injected"], injected + 1, "the outage happened")
        self.assertEqual(self.pages.form_fields()["idempotency_key"], key, "the form keeps the key to resume")
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=1, charges=0)

        page = self.pages.book()
        self.assert_paid_ride_page(page, key)
        self.assertEqual(self.book_statuses(2), [503, 303])
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=1, charges=1)


class WithADeclinedCard(RiderTestCase):
    declines = True

    def test_a_declined_card_shows_the_stored_decline_for_every_submission(self):
        self.sign_in()
        fields = self.pages.form_fields()
        cookies = self.pages.cookie_header()
        page = self.pages.book()
        self.assertEqual(page.kind, "declined", "a declined card shows the decline: %s" % (page,))
        message = self.stack.ledger.declined_ride(self.rider.user_id, self.rider.customer, fields["idempotency_key"])
        self.assertIn(message, page.text)
        self.assertNotEqual(self.pages.form_fields()["idempotency_key"], fields["idempotency_key"],
                            "a fresh form (new key) to try again")
        # The same form again: the stored result of the key, not a second attempt.
        again = self.pages.post_form("/book", fields, cookies)
        self.assertEqual(again.status, 402, again.body[:500])
        self.assertIn(message, again.body)
        self.assertEqual(self.book_statuses(2), [402, 402])
        again_message = self.stack.ledger.declined_ride(self.rider.user_id, self.rider.customer,
                                                        fields["idempotency_key"])
        self.assertEqual(again_message, message)
        self.stack.ledger.rider_totals(self.rider.user_id, self.rider.customer, keys=1, charges=0)

