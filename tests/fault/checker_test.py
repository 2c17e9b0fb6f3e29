#!/usr/bin/env python3
"""The fault suite's checker alone, on small recorded histories written here (no server, no process):
a clean history passes, and a planted double charge, lost job, stuck key and reused answer are each
named in the verdict, alone and all together; and the same for the restore drill's checker, whose
reused answer is a ride id answered to a second request.

Usage: tests/fault/checker_test.py [-v]   (exit 0 when every case passes)
"""

import contextlib
import copy
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness.checker import check  # noqa: E402  (importable only once the path above is in place)
from harness.history import History  # noqa: E402
from harness.restore_checker import check_restore  # noqa: E402
from harness.restore_drill import Request  # noqa: E402
from harness.traffic import KeyRecord  # noqa: E402

RIDER = ("rider@example.com", "cus_rider", "rr_rider", False)
DECLINER = ("decliner@example.com", "cus_declined", "rr_decliner", True)
HOSTILE = ("hostile@example.com", "cus_hostile", "rr_hostile")
USER_IDS = {RIDER[0]: 1, DECLINER[0]: 2, HOSTILE[0]: 3}


def ride_body(ride_id, charge):
    return json.dumps({"ride": {"id": ride_id, "stripe_charge_id": charge}})


def key_row(row_id, user_id, key, code, body, payment_key):
    return {"id": row_id, "user_id": user_id, "idempotency_key": key, "recovery_point": "finished", "locked": False,
            "response_code": code, "response_body": body, "payment_idempotency_key": payment_key,
            "request_path": "/rides", "origin_ip": "127.0.0.1"}


def ride_row(ride_id, key_id, charge):
    return {"id": ride_id, "idempotency_key_id": key_id, "stripe_charge_id": charge, "user_id": 1, "cancelled": False,
            "stripe_refund_id": None, "refund_idempotency_key": "refund-%d" % ride_id}


def receipt(jid, ride_id):
    return json.dumps({"class": "SendRideReceiptJob", "jid": jid, "args": [{"ride_id": ride_id}]})


def client(user, key, status, body):
    """What one good client saw: the final answer to its key."""
    record = KeyRecord(key, user[0], [("origin_lat", "1.5")])
    record.status, record.body, record.attempts = status, body.encode(), 1
    record.statuses[status] += 1
    return record


def clean_history():
    """Three paid rides and a declined one, each charged (or not) once, each receipt in Redis, every
    client told what its key stores."""
    declined = json.dumps({"error": {"type": "card_error", "message": "declined"}})
    keys = [key_row(101, 1, "fault-paid-1", 201, ride_body(10, "ch_10"), "pk-101"),
            key_row(102, 2, "fault-declined", 402, declined, "pk-102"),
            key_row(103, 1, "fault-paid-2", 201, ride_body(11, "ch_11"), "pk-103"),
            key_row(104, 1, "fault-paid-3", 201, ride_body(12, "ch_12"), "pk-104")]
    return History(
        keys=keys,
        rides=[ride_row(10, 101, "ch_10"), ride_row(11, 103, "ch_11"), ride_row(12, 104, "ch_12")],
        customers={1: RIDER[1], 2: DECLINER[1], 3: HOSTILE[1]},
        charges=[{"id": "ch_10", "idempotency_key": "pk-101", "customer": RIDER[1]},
                 {"id": "ch_11", "idempotency_key": "pk-103", "customer": RIDER[1]},
                 {"id": "ch_12", "idempotency_key": "pk-104", "customer": RIDER[1]}],
        queue=[receipt("jid-10", 10), receipt("jid-11", 11), receipt("jid-12", 12)],
        records=[client(RIDER, "fault-paid-1", 201, keys[0]["response_body"]),
                 client(DECLINER, "fault-declined", 402, declined),
                 client(RIDER, "fault-paid-2", 201, keys[2]["response_body"]),
                 client(RIDER, "fault-paid-3", 201, keys[3]["response_body"])],
        requests=4, user_ids=dict(USER_IDS), users=[RIDER, DECLINER], hostile_user=HOSTILE)


# The four plants, each a change to a clean history (each to a ride of its own, so that together
# none hides another), returning the finding that must name it and the text that finding must hold.
def plant_double_charge(h):
    """The provider charged the first paid ride's rider a second time, under a key no request holds."""
    h.charges.append({"id": "ch_twice", "idempotency_key": "planted-second", "customer": RIDER[1]})
    return "duplicates", "planted-second"


def plant_lost_job(h):
    """The second paid ride's receipt never reached Redis."""
    h.queue = [line for line in h.queue if '"jid-11"' not in line]
    return "lost_jobs", "key 103"


def plant_stuck_key(h):
    """The third paid key is still locked at charge_created, with no answer stored."""
    h.keys[3].update(recovery_point="charge_created", locked=True, response_code=None, response_body=None)
    return "stuck_keys", "key 104 fault-paid-3"


def plant_reused_answer(h):
    """The second paid ride's client was answered with the first ride's stored answer."""
    h.records[2].body = h.keys[0]["response_body"].encode()
    return "mismatched_answers", "key fault-paid-2: client got 201"


PLANTS = [plant_double_charge, plant_lost_job, plant_stuck_key, plant_reused_answer]


def verdict(h):
    """The checker's verdict; its log lines are kept out of the test's output."""
    with contextlib.redirect_stdout(io.StringIO()):
        return check(h)


class CheckerTest(unittest.TestCase):
    def assertNamed(self, findings, name, needle):
        self.assertIn(name, findings, "the checker did not name %s; it named %s" % (name, sorted(findings)))
        self.assertTrue(any(needle in text for text in findings[name]),
                        "no %s finding mentions %r: %s" % (name, needle, findings[name]))

    def test_clean_history_passes(self):
        result, findings, statuses, _ = verdict(clean_history())
        self.assertEqual(dict(findings), {})
        for name in ("duplicates", "orphan_charges", "bad_rides", "lost_jobs", "duplicate_jobs", "stuck_keys",
                     "mismatched_answers", "hostile_rows", "wrong_origin_ip"):
            self.assertEqual(result[name], 0, name)
        self.assertEqual((result["created"], result["declined"], result["jobs_in_redis"]), (3, 1, 3))
        self.assertEqual(statuses, {201: 3, 402: 1})

    def test_each_plant_is_named(self):
        for plant in PLANTS:
            with self.subTest(plant=plant.__name__):
                h = clean_history()
                name, needle = plant(h)
                result, findings, _, _ = verdict(h)
                self.assertNamed(findings, name, needle)
                self.assertGreaterEqual(result[name], 1, "%s counted in the summary line" % name)

    def test_all_plants_together_are_each_named(self):
        h = clean_history()
        named = [plant(h) for plant in PLANTS]
        result, findings, _, _ = verdict(h)
        for name, needle in named:
            self.assertNamed(findings, name, needle)
            self.assertGreaterEqual(result[name], 1, name)

    def test_history_is_not_changed_by_the_check(self):
        h = clean_history()
        plant_stuck_key(h)
        before = copy.deepcopy((h.keys, h.rides, h.charges, h.queue))
        verdict(h)
        self.assertEqual((h.keys, h.rides, h.charges, h.queue), before)


def restore_records():
    """What a restore drill recorded: two rides answered 201 to their own requests, each charged
    once, each receipt in Redis, every key finished."""
    requests = []
    for ride_id in (10, 11):
        request = Request(("restore-0", "rr_restore"), "ride", "/rides", [])
        request.answers.append((1.0, 201, ride_id, 1))
        requests.append(request)
    keys = [{"user_id": 1, "idempotency_key": r.key, "recovery_point": "finished", "response_code": 201}
            for r in requests]
    rides = [{"id": 10, "stripe_charge_id": "ch_10", "stripe_refund_id": None},
             {"id": 11, "stripe_charge_id": "ch_11", "stripe_refund_id": None}]
    charges = [{"id": "ch_10", "idempotency_key": "pk-10"}, {"id": "ch_11", "idempotency_key": "pk-11"}]
    queue = [receipt("jid-10", 10), receipt("jid-11", 11)]
    return keys, rides, charges, [], requests, queue


class RestoreCheckerTest(unittest.TestCase):
    """The restore drill's checker (its RESULT line's counts) on records written here."""

    COUNTS = ("double_charges", "double_refunds", "orphan_charges", "reused_ids", "lost_acknowledged", "lost_jobs",
              "stuck_keys")

    def test_clean_records_pass(self):
        counts, findings = check_restore(*restore_records())
        self.assertEqual({name: counts[name] for name in self.COUNTS}, dict.fromkeys(self.COUNTS, 0))
        self.assertEqual(dict(findings), {})

    def test_each_plant_is_counted(self):
        keys, rides, charges, refunds, requests, queue = restore_records()
        charges.append({"id": "ch_twice", "idempotency_key": "pk-10"})  # the first ride charged twice
        queue.pop()  # the second ride's receipt lost
        keys[1]["recovery_point"] = "charge_created"  # the second key stuck
        twin = Request(("restore-1", "rr_other"), "ride", "/rides", [])  # the first ride's id answered again
        twin.answers.append((2.0, 201, 10, 1))
        counts, findings = check_restore(keys, rides, charges, refunds, requests + [twin], queue)
        for name in ("double_charges", "lost_jobs", "stuck_keys", "reused_ids"):
            self.assertEqual(counts[name], 1, name)
        self.assertTrue(any("ride 10 answered to" in text for text in findings["reused_ids"]), findings)


if __name__ == "__main__":
    unittest.main()
