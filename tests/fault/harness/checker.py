"""The checker of the exactly-once invariants, on a recorded history (history.py) alone: it reads
no database, no provider and no Redis, so a history written by hand tests it (checker_test.py).

check(history) returns the verdict: the figures of the summary line in their order, the findings
by name (a run passes only with none), the good clients' statuses and the provider's stats. It
checks invariants 1-6 of fault_suite.py here, the HA profiles' in checker_ha.py and the hostile
client's in checker_hostile.py."""

import collections
import json

from .base import clock
from .checker_ha import check_ha
from .checker_hostile import check_hostile
from .traffic import final_codes

Verdict = collections.namedtuple("Verdict", "result findings statuses stats")


def check(h):
    """The verdict on History h."""
    findings = collections.defaultdict(list)
    keys, rides, staged, charges, refunds, stats = h.keys, h.rides, h.staged, h.charges, h.refunds, h.stats

    keys_by_id = {k["id"]: k for k in keys}
    keys_by_user_key = {(k["user_id"], k["idempotency_key"]): k for k in keys}
    keys_by_payment = {k["payment_idempotency_key"]: k for k in keys}
    rides_by_key = collections.defaultdict(list)
    for r in rides:
        if r["idempotency_key_id"] is not None:
            rides_by_key[r["idempotency_key_id"]].append(r)
    rides_by_id = {r["id"]: r for r in rides}
    charges_by_payment = collections.defaultdict(list)
    for c in charges:
        charges_by_payment[c["idempotency_key"]].append(c)
    customers = h.customers
    paying_customers = {customers.get(k["user_id"]) for k in keys if k["response_code"] == 201}

    # 1. Exactly one charge per paid request, none twice, none without a ride.
    duplicates = 0
    for payment_key, group in charges_by_payment.items():
        if len(group) > 1:
            duplicates += len(group) - 1
            findings["duplicates"].append("payment key %s charged %d times" % (payment_key, len(group)))
    # A request's provider key derives from the request (the user and the client's key, under
    # PROVIDER_KEY_SECRET) and its key row stores it, and the charge's description names no
    # request: a second charge of a paid request can only come under a key that no request
    # holds, so such a charge of a paying customer counts as a duplicate (and as an orphan below).
    for c in charges:
        if c["idempotency_key"] not in keys_by_payment and c["customer"] in paying_customers:
            duplicates += 1
            findings["duplicates"].append("customer %s charged under payment key %s, which no request holds"
                                          % (c["customer"], c["idempotency_key"]))
    orphan_charges = 0
    for c in charges:
        k = keys_by_payment.get(c["idempotency_key"])
        ride_charges = [r for r in rides_by_key.get(k["id"], [])] if k else []
        if k is None or not any(r["stripe_charge_id"] == c["id"] for r in ride_charges):
            orphan_charges += 1
            findings["orphan_charges"].append("charge %s (payment key %s) has no ride recording it"
                                              % (c["id"], c["idempotency_key"]))
        elif k["response_code"] != 201:
            orphan_charges += 1
            findings["orphan_charges"].append("charge %s belongs to key %d answered %s"
                                              % (c["id"], k["id"], k["response_code"]))
    bad_rides = 0
    for k in keys:
        mine = rides_by_key.get(k["id"], [])
        if k["response_code"] == 201:
            paid = charges_by_payment.get(k["payment_idempotency_key"], [])
            if len(mine) != 1 or len(paid) != 1 or mine[0]["stripe_charge_id"] != paid[0]["id"]:
                bad_rides += 1
                findings["bad_rides"].append("key %d (201): %d rides, %d charges, ride charge %s" % (
                    k["id"], len(mine), len(paid), mine[0]["stripe_charge_id"] if mine else None))
        elif k["response_code"] == 402:
            if any(r["stripe_charge_id"] for r in mine) or charges_by_payment.get(k["payment_idempotency_key"]):
                bad_rides += 1
                findings["bad_rides"].append("key %d (402) has a charge" % k["id"])
        if len(mine) > 1:
            bad_rides += 1
            findings["bad_rides"].append("key %d has %d rides" % (k["id"], len(mine)))

    # 2. Every key finished with one of its endpoint's final answers, none locked.
    stuck = [k for k in keys if k["recovery_point"] != "finished" or k["locked"]
             or k["response_code"] not in final_codes(k["request_path"])]
    for k in stuck:
        findings["stuck_keys"].append("key %d %s: recovery_point=%s locked=%s response_code=%s" % (
            k["id"], k["idempotency_key"], k["recovery_point"], k["locked"], k["response_code"]))

    # 3. One staged job per finished 201, every one in Redis (distinct jids; re-pushes allowed).
    lost_jobs = 0
    duplicate_jobs = 0
    redis_jobs = 0
    paid_keys = [k for k in keys if k["response_code"] == 201]
    if h.queue is not None:
        jids_by_ride = collections.defaultdict(set)
        cancel_jids_by_ride = collections.defaultdict(set)
        jids = set()
        bad_payloads = 0
        for line in h.queue:
            line = line.strip()
            if not line:
                continue
            redis_jobs += 1
            try:
                job = json.loads(line)
                jids.add(job["jid"])
                args = job.get("args") or [{}]
                ride_id = args[0].get("ride_id") if isinstance(args[0], dict) else None
                if job["class"] == "SendCancellationReceiptJob":
                    cancel_jids_by_ride[ride_id].add(job["jid"])
                else:
                    jids_by_ride[ride_id].add(job["jid"])
            except (ValueError, KeyError, TypeError, AttributeError):
                bad_payloads += 1
        if bad_payloads:
            findings["bad_jobs"].append("%d payloads in queue:default are not Sidekiq JSON with a jid" % bad_payloads)
        for row in staged:
            findings["lost_jobs"].append("jid %s still in staged_jobs" % row["jid"])
        for k in paid_keys:
            mine = rides_by_key.get(k["id"], [])
            got = set().union(*(jids_by_ride.get(r["id"], set()) for r in mine)) if mine else set()
            if not got:
                lost_jobs += 1
                findings["lost_jobs"].append("key %d (ride %s): no job in Redis" % (
                    k["id"], [r["id"] for r in mine]))
            elif len(got) > 1:
                duplicate_jobs += len(got) - 1
                findings["duplicate_jobs"].append("key %d: %d distinct jids %s" % (k["id"], len(got), sorted(got)))
        for ride_id, group in jids_by_ride.items():
            r = rides_by_id.get(ride_id)
            k = keys_by_id.get(r["idempotency_key_id"]) if r else None
            if k is None or k["response_code"] != 201:
                duplicate_jobs += len(group)
                findings["duplicate_jobs"].append("jobs %s for ride %s, which has no 201 key" % (sorted(group), ride_id))
        # A cancellation receipt for every refunded ride, once; none for any other ride.
        refunded_rides = [r for r in rides if r["cancelled"] and r["stripe_refund_id"]]
        for r in refunded_rides:
            got = cancel_jids_by_ride.get(r["id"], set())
            if not got:
                lost_jobs += 1
                findings["lost_jobs"].append("ride %d (cancelled, refund %s): no cancellation receipt in Redis"
                                             % (r["id"], r["stripe_refund_id"]))
            elif len(got) > 1:
                duplicate_jobs += len(got) - 1
                findings["duplicate_jobs"].append("ride %d: %d distinct cancellation jids" % (r["id"], len(got)))
        for ride_id, group in cancel_jids_by_ride.items():
            r = rides_by_id.get(ride_id)
            if r is None or not r["cancelled"]:
                duplicate_jobs += len(group)
                findings["duplicate_jobs"].append("cancellation jobs %s for ride %s, which is not cancelled"
                                                  % (sorted(group), ride_id))
        if len(jids) < len(paid_keys) + len(refunded_rides):
            lost_jobs = max(lost_jobs, len(paid_keys) + len(refunded_rides) - len(jids))
        lost_jobs = max(lost_jobs, len(staged))
    # Pushes beyond one per jid: a batch pushed again after a rollback (allowed, counted).
    repushed = redis_jobs - len(jids) if h.queue is not None else 0

    # 4. Each final answer equals what its key stores.
    mismatched = 0
    extra_answers = 0
    unexpected = 0
    answered = 0
    gave_up = 0
    for rec in h.records:
        if rec.status is None:
            gave_up += 1
            continue
        answered += 1
        if rec.status not in final_codes(rec.path):
            unexpected += 1
            findings["unexpected_answers"].append("key %s: final answer %d %r" % (
                rec.key, rec.status, rec.body[:300]))
        k = keys_by_user_key.get((h.user_ids[rec.user], rec.key))
        if k is None:
            mismatched += 1
            findings["mismatched_answers"].append("key %s answered %d but has no row" % (rec.key, rec.status))
            continue
        stored = (k["response_body"] or "").encode()
        if k["response_code"] != rec.status or stored != rec.body:
            mismatched += 1
            findings["mismatched_answers"].append("key %s: client got %d %r, stored %s %r" % (
                rec.key, rec.status, rec.body[:200], k["response_code"], stored[:200]))
        for status, body, _replayed in rec.extra:
            extra_answers += 1
            if k["response_code"] != status or stored != body:
                mismatched += 1
                findings["mismatched_answers"].append("key %s: second request got %d %r, stored %s %r" % (
                    rec.key, status, body[:200], k["response_code"], stored[:200]))
    client_keys = {(h.user_ids[r.user], r.key) for r in h.records}
    hostile_id = h.user_ids[h.hostile_user[0]]
    # The hostile user's rows are checked in check_hostile (invariant 7).
    foreign = [k for k in keys if (k["user_id"], k["idempotency_key"]) not in client_keys
               and k["user_id"] != hostile_id]
    for k in foreign:
        findings["foreign_keys"].append("key row %d %s was never sent" % (k["id"], k["idempotency_key"]))

    # 6. Refunds (a rider's cancel refunds the ride's charge): no charge refunded twice, every refund the refund of a charged ride
    # (under that ride's own refund key), every 200 to a cancel backed by its refund at the
    # provider, and every refund at the provider recorded on its ride, which is cancelled.
    refund_violations = 0
    rides_by_refund_key = {r["refund_idempotency_key"]: r for r in rides}
    refunds_by_charge = collections.defaultdict(list)
    refunds_by_id = {}
    for refund in refunds:
        refunds_by_charge[refund["charge"]].append(refund)
        refunds_by_id[refund["id"]] = refund
    double_refunds = 0
    for charge, group in refunds_by_charge.items():
        if len(group) > 1:
            double_refunds += len(group) - 1
            findings["double_refunds"].append("charge %s refunded %d times: %s" % (
                charge, len(group), sorted(r["id"] for r in group)))
    for refund in refunds:
        r = rides_by_refund_key.get(refund["idempotency_key"])
        if r is None or r["stripe_charge_id"] != refund["charge"]:
            refund_violations += 1
            findings["refund_violations"].append("refund %s of charge %s: no charged ride with refund key %s" % (
                refund["id"], refund["charge"], refund["idempotency_key"]))
        elif not r["cancelled"] or r["stripe_refund_id"] != refund["id"]:
            refund_violations += 1
            findings["refund_violations"].append("refund %s at the provider, but ride %d has cancelled=%s "
                                                 "stripe_refund_id=%s" % (refund["id"], r["id"], r["cancelled"],
                                                                          r["stripe_refund_id"]))
    cancels_answered = 0
    for rec in h.records:
        if rec.ride_id is None or rec.status != 200:
            continue
        cancels_answered += 1
        try:
            shown = json.loads(rec.body).get("ride") or {}
        except (ValueError, AttributeError):
            shown = {}
        r = rides_by_id.get(rec.ride_id)
        refund = refunds_by_id.get(shown.get("stripe_refund_id"))
        if (r is None or r["user_id"] != h.user_ids[rec.user] or refund is None
                or refund["charge"] != r["stripe_charge_id"]):
            refund_violations += 1
            findings["refund_violations"].append("cancel %s of ride %s answered 200 with refund %s, which the "
                                                 "provider does not have for that ride's charge" % (
                                                     rec.key, rec.ride_id, shown.get("stripe_refund_id")))
    for r in rides:
        if r["stripe_refund_id"] and r["stripe_refund_id"] not in refunds_by_id:
            refund_violations += 1
            findings["refund_violations"].append("ride %d records refund %s, unknown to the provider" % (
                r["id"], r["stripe_refund_id"]))

    # 5. (cluster) No client error overlaps a rolling restart.
    restart_errors = 0
    if h.cluster:
        for sent, ended, status, key in h.client_errors:
            for start, end in h.rolling_windows:
                if sent <= end and ended >= start:
                    restart_errors += 1
                    findings["restart_errors"].append(
                        "key %s: %s at %s-%s during the rolling restart of %s-%s" % (
                            key, status if status is not None else "no answer", clock(sent), clock(ended),
                            clock(start), clock(end)))
                    break

    statuses = collections.Counter()
    for rec in h.records:
        statuses.update(rec.statuses)
    result = collections.OrderedDict()
    result["requests"] = h.requests
    result["keys"] = len(h.records)
    result["answered"] = answered
    result["abandoned"] = gave_up
    result["second_answers"] = extra_answers
    result["replayed_answers"] = sum(1 for r in h.records if r.replayed)
    result["created"] = sum(1 for k in keys if k["response_code"] == 201)
    result["declined"] = sum(1 for k in keys if k["response_code"] == 402)
    result["faults"] = sum(h.faults.values())
    result["charges"] = len(charges)
    result["cancels"] = sum(1 for r in h.records if r.ride_id is not None)
    result["cancels_answered_200"] = cancels_answered
    result["refunds"] = len(refunds)
    result["cancelled_rides"] = sum(1 for r in rides if r["cancelled"])
    result["jobs_in_redis"] = redis_jobs
    result["jobs_repushed"] = repushed
    if h.sentinel:
        result["redis_failovers"] = h.faults["redis_failover"]
        result["final_redis_master"] = h.final_redis_master
    result["duplicates"] = duplicates
    result["double_refunds"] = double_refunds
    result["refund_violations"] = refund_violations
    result["orphan_charges"] = orphan_charges
    result["bad_rides"] = bad_rides
    result["lost_jobs"] = lost_jobs
    result["duplicate_jobs"] = duplicate_jobs
    result["stuck_keys"] = len(stuck)
    result["mismatched_answers"] = mismatched
    result["unexpected_answers"] = unexpected
    result["unexpected_exits"] = len(h.unexpected_exits)
    if h.cluster:
        result["client_errors"] = len(h.client_errors)
        result["rolling_restarts"] = len(h.rolling_windows)
        result["restart_errors"] = restart_errors
    for e in h.unexpected_exits:
        findings["unexpected_exits"].append(e)
    if h.ha:
        result.update(check_ha(h, findings))
    result.update(check_hostile(h, findings))
    return Verdict(result, findings, statuses, stats)
