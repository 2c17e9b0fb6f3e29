"""The restore drill's checker on what it recorded, as plain data (no server): the provider's
charges and refunds, the restored database's key rows and rides, the lines of Redis's queue:default
and what each client was told (restore_drill.Request: its user, key, kind and answers).

check_restore returns the counts of the RESULT line it decides (double_charges, double_refunds,
orphan_charges, reused_ids, lost_acknowledged, lost_jobs, stuck_keys) and the findings by name."""

import collections
import json

# Every key the drill's hostile client sends starts with this; its requests are all refused, so no
# key row may.
HOSTILE_KEY_PREFIX = "hostile-restore-"


def check_restore(keys, rides, charges, refunds, requests, queue):
    """(counts, findings) over the records of one restore drill."""
    c = collections.Counter()
    findings = collections.defaultdict(list)
    # One charge per provider key (the key derives from the client's key) and per ride.
    per_key = collections.Counter(ch["idempotency_key"] for ch in charges)
    c["double_charges"] = sum(n - 1 for n in per_key.values() if n > 1)
    per_charge = collections.Counter(rf["charge"] for rf in refunds)
    c["double_refunds"] = sum(n - 1 for n in per_charge.values() if n > 1)
    ride_charges = {r["stripe_charge_id"] for r in rides if r["stripe_charge_id"]}
    for ch in charges:
        if ch["id"] not in ride_charges and ch["id"] not in per_charge:
            c["orphan_charges"] += 1
            findings["orphan_charges"].append("charge %s (%s) has no ride and no refund" % (
                ch["id"], ch["idempotency_key"]))
    # Ride ids answered to two different requests.
    by_ride = collections.defaultdict(set)
    for req in requests:
        if req.kind != "ride":
            continue
        for _, status, ride, _ in req.answers:
            if status == 201:
                by_ride[ride].add((req.user[0], req.key))
    for ride, owners in by_ride.items():
        if len(owners) > 1:
            c["reused_ids"] += 1
            findings["reused_ids"].append("ride %s answered to %s" % (ride, sorted(owners)))
    # A 201/200 seen before a restore, retried after it: the same ride.
    for req in requests:
        seen = [(t, s, ride, rnd) for t, s, ride, rnd in req.answers if s in (200, 201)]
        if not seen:
            continue
        first_round = seen[0][3]
        # Final answers only: a 409 or 503 on the way (a key the restore left unfinished and
        # the completer resumes) is followed by retries until the final one.
        later = [a for a in req.answers if a[3] > first_round and a[1] in (200, 201, 402, 404, 422)]
        for t, s, ride, rnd in later:
            if s != seen[0][1] or ride != seen[0][2]:
                c["lost_acknowledged"] += 1
                findings["lost_acknowledged"].append("key %s: %d ride %s before, %d ride %s after" % (
                    req.key, seen[0][1], seen[0][2], s, ride))
                break
    # Every ride's receipt job reached Redis.
    receipts = set()
    for line in queue:
        try:
            job = json.loads(line)
        except ValueError:
            continue
        if job.get("class") == "SendRideReceiptJob":
            receipts.add(job["args"][0].get("ride_id"))
    charged = [r for r in rides if r["stripe_charge_id"]]
    c["lost_jobs"] = sum(1 for r in charged if r["id"] not in receipts)
    c["stuck_keys"] = sum(1 for k in keys if k["recovery_point"] != "finished")
    hostile = [k for k in keys if k["idempotency_key"].startswith(HOSTILE_KEY_PREFIX)]
    if hostile:
        findings["hostile_rows"].append("%d keys of refused hostile requests were written" % len(hostile))
    return c, findings
