"""The suite's own checks, checked: the browser reaches the real API process and saves real PNGs;
the ledger accepts a key with exactly one ride and one charge (booked through the JSON API, which
needs no page) and refuses every other shape."""

import http.client
import json
import secrets
import unittest

from browser import Browser
from rider_pages import RiderPages
from suite_stack import shared

RIDE_FORM = "origin_lat=37.7749&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712"


def book_through_the_api(stack, token, key):
    conn = http.client.HTTPConnection("127.0.0.1", stack.api.port, timeout=30)
    try:
        conn.request("POST", "/rides", body=RIDE_FORM, headers={
            "Authorization": "Bearer " + token, "Idempotency-Key": key,
            "Content-Type": "application/x-www-form-urlencoded"})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


class HarnessSelfTest(unittest.TestCase):
    def setUp(self):
        self.stack = shared()

    def test_the_browser_reaches_the_api_process_and_saves_a_png(self):
        browser = Browser(self.stack.screenshot_dir, self.stack.log_dir, "harness")
        self.addCleanup(browser.quit)
        offset = self.stack.api.log_offset()
        pages = RiderPages(browser, self.stack.api.origin)
        page = pages.open("/healthz")
        self.assertEqual(page.kind, "unknown", "/healthz is none of the rider pages")
        self.assertEqual(len(self.stack.api.requests_since(offset, "GET", "/healthz", 1)), 1,
                         "the API logged the browser's request")
        path = browser.screenshot("healthz")
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_the_ledger_accepts_one_ride_and_one_charge_per_key_and_nothing_else(self):
        rider = self.stack.new_rider("harness")
        key = "harness-" + secrets.token_hex(12)
        status, body = book_through_the_api(self.stack, rider.token, key)
        self.assertEqual(status, 201, body)
        ledger = self.stack.ledger
        paid = ledger.paid_ride(rider.user_id, rider.customer, key)
        self.assertEqual(paid["ride_id"], str(body.get("id", body.get("ride", {}).get("id"))))
        ledger.rider_totals(rider.user_id, rider.customer, keys=1, charges=1)
        with self.assertRaises(AssertionError):
            ledger.paid_ride(rider.user_id, rider.customer, "harness-never-sent-" + secrets.token_hex(8))
        with self.assertRaises(AssertionError):
            ledger.paid_ride(rider.user_id, "cus_someone_else", key)
        with self.assertRaises(AssertionError):
            ledger.declined_ride(rider.user_id, rider.customer, key)
        with self.assertRaises(AssertionError):
            ledger.rider_totals(rider.user_id, rider.customer, keys=2, charges=2)
