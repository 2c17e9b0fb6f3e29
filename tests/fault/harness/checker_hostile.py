"""The hostile client's checks on a recorded history (history.py): every answer it got has the
status docs/http-api.md promises, a smuggling shape one answer and a closed connection, every probe
an answer outside the faults that excuse none; nothing an invalid shape carried wrote a row; and
the bounds its floods meet (failed authentications, waiters per key, origin addresses)."""

import collections

from .base import clock, log
from .hostile_wire import (AUTH_FAILURES_PER_MINUTE, GOOD_ADDRESS, HOSTILE_ADDRESS, HOSTILE_PREFIX,
                           IDEMPOTENCY_MAX_WAITERS_PER_USER)
from .profiles import HA_LEADER_FAULT_KINDS

# Faults during which the API may not answer at all, or HAProxy answers for it (502, 503 with
# no API up, 504): a probe that overlaps one (plus a grace for health checks to notice the
# API back) may see a connection error or a HAProxy error page without that being a finding.
# A rolling restart counts only for probes straight to an API (that API is down a moment);
# through HAProxy it must go unseen, as for the good clients (invariant 5). The provider,
# Redis, enqueuer and completer faults never stop the API answering, so they excuse nothing.
EXCUSING_FAULTS = ("api_kill", "api_kill_in_flight", "pg_restart", "pgbouncer_restart", "rolling_restart",
                   "ha_kill_postgres", "ha_kill_patroni", "ha_partition", "ha_standbys_lost")


def hostile_excused(h, rec):
    grace = 2.0 * h.slow
    ended = rec.ended if rec.ended is not None else rec.sent
    for kind, start, end in h.fault_windows:
        if kind not in EXCUSING_FAULTS or (kind == "rolling_restart" and not rec.direct):
            continue
        if rec.sent <= end + grace and ended >= start:
            return True
    return False


def check_hostile(h, findings):
    """6. The hostile client: every answer the API gave it has the status docs/http-api.md promises
    (never a 5xx but 503), a smuggling shape got one answer on a connection the API closed,
    and every probe got an answer outside the faults that excuse none.
    7. Nothing it sent with an invalid shape wrote a row: no key row holds HOSTILE_PREFIX, and
    the hostile user's keys, rides and charges all belong to keys of its valid flood; the
    flood's final answers equal what their keys store."""
    keys, rides, charges = h.keys, h.rides, h.charges
    counts = collections.Counter()
    by_kind = collections.defaultdict(collections.Counter)

    def finding(name, rec, text):
        counts[name] += 1
        findings["hostile_" + name].append("%s %s%s %s-%s port %d: %s" % (
            rec.kind, rec.detail, " (direct)" if rec.direct and h.cluster else "", clock(rec.sent),
            clock(rec.ended or rec.sent), rec.port, text))

    for rec in h.hostile_records:
        excused = hostile_excused(h, rec)
        first = rec.answers[0] if rec.answers else None
        by_kind[rec.kind][first[0] if first else "none"] += 1
        if first is None:
            # No answer: an idle connection may be closed (evicted, or timed out by HAProxy),
            # anything else must be answered unless a fault excuses it.
            if rec.kind == "idle" or excused:
                counts["excused"] += rec.kind != "idle"
            else:
                finding("no_answer", rec, rec.error or "no answer")
            continue
        counts["answers"] += len(rec.answers)
        status, api, body = first
        if not api and excused and status >= 500:
            counts["excused"] += 1  # HAProxy's own 502/503/504 during a fault
        elif status >= 500 and status != 503 and api and in_leader_fault(h, rec):
            # The API's 500 while the leader changes (a node that HAProxy sends connections to
            # a moment before it accepts writes: "read-only transaction"): counted and shown,
            # not failed on; the HA profiles are about exactly-once (see the docs).
            counts["failover_5xx"] += 1
            if counts["failover_5xx"] <= 5:
                log("NOTE: %s %s-%s: %d from the API during a leader change: %r" % (
                    rec.kind, clock(rec.sent), clock(rec.ended or rec.sent), status, body[:160]))
        elif status >= 500 and status != 503:
            finding("5xx", rec, "%d from %s: %r" % (status, "the API" if api else "HAProxy", body[:200]))
        elif status not in rec.expected and not (status == 503 and rec.kind not in ("smuggle", "long_method")):
            finding("wrong_status", rec, "%d from %s, expected %s: %r" % (
                status, "the API" if api else "HAProxy", sorted(rec.expected)[:6], body[:200]))
        for status, api, body in rec.answers[1:]:
            if status >= 500 and status != 503 and (api or not excused) and not (
                    api and in_leader_fault(h, rec)):
                finding("5xx", rec, "later answer %d from %s: %r" % (status, "the API" if api else "HAProxy",
                                                                     body[:200]))
        if rec.strict:
            if rec.direct:
                # Straight to the API: the one answer, then the close; the pipelined request
                # must never be answered.
                if len(rec.answers) > 1 or rec.rest:
                    finding("second_answers", rec, "%d answers %s and %d more bytes %r" % (
                        len(rec.answers), [a[0] for a in rec.answers], len(rec.rest), rec.rest[:100]))
                elif not rec.closed:
                    finding("unclosed", rec, "connection still open %.1fs after the answer" % (2.0 * h.slow))
            else:
                # Through HAProxy: it frames requests itself and may keep the client's
                # connection after the API refused one (the API closes its own side, so the
                # two cannot disagree about where the next request starts). Then HAProxy
                # sends the pipelined GET /healthz to an API as the request it is: at most
                # that one more answer, and it must be /healthz's.
                later = rec.answers[1:]
                if rec.rest or len(later) > 1 or any(
                        a[2] != b'{"status":"ok"}' and not (excused and not a[1]) for a in later):
                    finding("second_answers", rec, "answers %s %r and %d more bytes" % (
                        [a[0] for a in rec.answers], [a[2][:80] for a in later], len(rec.rest)))

    # 7. Rows.
    hostile_id = h.user_ids[h.hostile_user[0]]
    flood = set(h.flood_keys)
    bad_rows = {}
    for k in keys:
        if HOSTILE_PREFIX in k["idempotency_key"]:
            bad_rows[k["id"]] = "key row %d %r of user %d holds the invalid-shape prefix" % (
                k["id"], k["idempotency_key"], k["user_id"])
        elif k["user_id"] == hostile_id and k["idempotency_key"] not in flood:
            bad_rows[k["id"]] = "key row %d %r of the hostile user was never sent as a valid key" % (
                k["id"], k["idempotency_key"])
    hostile_key_ids = {k["id"] for k in keys if k["user_id"] == hostile_id and k["idempotency_key"] in flood}
    for r in rides:
        if r["user_id"] == hostile_id and r["idempotency_key_id"] not in hostile_key_ids:
            bad_rows["ride %d" % r["id"]] = "ride %d of the hostile user has key row %s, no key of its flood" % (
                r["id"], r["idempotency_key_id"])
    flood_payment_keys = {k["payment_idempotency_key"] for k in keys if k["id"] in hostile_key_ids}
    for c in charges:
        if c.get("customer") == h.hostile_user[1] and c["idempotency_key"] not in flood_payment_keys:
            bad_rows["charge " + c["id"]] = "charge %s of the hostile customer (payment key %s) is no flood key's" % (
                c["id"], c["idempotency_key"])
    for text in bad_rows.values():
        findings["hostile_rows"].append(text)
    keys_by_user_key = {(k["user_id"], k["idempotency_key"]): k for k in keys}
    mismatched = 0
    for key, status, body in h.flood_answers:
        k = keys_by_user_key.get((hostile_id, key))
        stored = (k["response_body"] or "").encode() if k else None
        if k is None or k["response_code"] != status or stored != body:
            mismatched += 1
            findings["hostile_mismatched_answers"].append("flood key %s: got %d %r, stored %s %r" % (
                key, status, body[:200], k and k["response_code"], stored and stored[:200]))

    bounds = check_hostile_bounds(h, hostile_id, finding, findings)

    log("hostile probes: %s" % ", ".join("%s=%d" % kv for kv in sorted(h.hostile_kinds.items())))
    for kind, statuses in sorted(by_kind.items()):
        log("hostile %s first answers: %s" % (kind, ", ".join(
            "%s=%d" % kv for kv in sorted(statuses.items(), key=lambda x: str(x[0])))))
    result = collections.OrderedDict()
    result["hostile_probes"] = len(h.hostile_records)
    result["hostile_answers"] = counts["answers"]
    result["hostile_excused"] = counts["excused"]
    result["hostile_5xx"] = counts["5xx"]
    result["hostile_wrong_status"] = counts["wrong_status"]
    result["hostile_second_answers"] = counts["second_answers"]
    result["hostile_unclosed"] = counts["unclosed"]
    result["hostile_no_answer"] = counts["no_answer"]
    result["hostile_rows"] = len(bad_rows)
    result["hostile_mismatched_answers"] = mismatched
    result.update(bounds)
    if h.ha:
        result["hostile_failover_5xx"] = counts["failover_5xx"]
    return result


def check_hostile_bounds(h, hostile_id, finding, findings):
    """8. The bounds the hostile floods meet (docs/http-api.md, "Hostile clients"):
    - a burst of unknown tokens got at most twice AUTH_FAILURES_PER_MINUTE 401s from each API it
      could reach (its minute may end inside the burst), the rest 429 with Retry-After;
    - no good client ever got the 429 of failed authentications: the API throttled the hostile
      client's address, not HAProxy's, which every client shares in the cluster profile;
    - every key row's origin_ip is its client's own address (HOSTILE_ADDRESS for the hostile
      user, GOOD_ADDRESS for the others), through HAProxy too (API_TRUSTED_PROXIES);
    - of a burst of waiters on one key, at most IDEMPOTENCY_MAX_WAITERS_PER_USER waited;
    - every 429 of either kind of burst carries Retry-After."""
    keys = h.keys
    counts = collections.Counter()

    def bound_finding(name, rec, text):
        counts[name] += 1
        finding(name, rec, text)

    for apis, records in h.token_bursts:
        if not records or any(hostile_excused(h, r) for r in records):
            counts["token_bursts_excused"] += 1
            continue
        counts["token_bursts"] += 1
        unauthorized = sum(1 for r in records if r.answers and r.answers[0][0] == 401)
        counts["token_burst_401s"] += unauthorized
        if unauthorized > 2 * AUTH_FAILURES_PER_MINUTE * apis:
            bound_finding("auth_unthrottled", records[0], "%d of %d unknown tokens answered 401 (bound %d for %d API%s)" % (
                unauthorized, len(records), 2 * AUTH_FAILURES_PER_MINUTE * apis, apis, "s" if apis > 1 else ""))
    # Every 429 of either kind of burst, checked or not, says when to come back.
    bursts = [records for _, records in h.token_bursts] + [[first] + waiters for first, waiters in h.waiter_bursts]
    for r in (r for records in bursts for r in records):
        if r.answers and r.answers[0][0] == 429 and not r.headers.get("retry-after", "").isdigit():
            finding("no_retry_after", r, "429 without Retry-After: %r" % (r.answers[0][2][:120],))
    for sent, key in h.auth_throttled:
        findings["good_client_auth_throttled"].append("%s key %s: 429 for failed authentications" % (
            clock(sent), key))
    for k in keys:
        want = HOSTILE_ADDRESS if k["user_id"] == hostile_id else GOOD_ADDRESS
        if k["origin_ip"] != want:
            counts["wrong_origin_ip"] += 1
            findings["wrong_origin_ip"].append("key row %d of user %d: origin_ip %s, the client was %s" % (
                k["id"], k["user_id"], k["origin_ip"], want))
    for first, waiters in h.waiter_bursts:
        answered = [r for r in waiters if r.answers]
        # The bound holds for the requests that waited and are not answered yet: a request
        # holds its place from its first wait until its answer, also when woken while the key
        # is still in flight and parked again, so a place frees only when a waiter is answered.
        # If the first request finished the key (201 or 402), every waiter then replays and a
        # later arrival replays at once; if it left the key unfinished (a 503 in a provider
        # outage), a woken waiter resumes the key and answers, and a later arrival may wait in
        # the place that answer freed, so more than the bound may wait one after another. The
        # same holds when a waiter's wait ran out (its 409 freed a place while the key was
        # still in flight, the first request having taken longer than wait=2). Only bursts
        # where every waited request was answered by the finished key are counted: each then
        # took its place before the key finished and held it until after, so all held at once.
        timed_out = [r for r in answered if r.answers[0][0] == 409 and r.ended - r.sent >= 1.5]
        if (not waiters or len(answered) < len(waiters) or any(hostile_excused(h, r) for r in waiters + [first])
                or max(r.sent for r in waiters) - min(r.sent for r in waiters) > 0.25
                or not first.answers or first.answers[0][0] not in (201, 402) or timed_out):
            continue  # a fault, a burst that did not arrive at once, or a key resumed by or outliving a waiter
        counts["waiter_bursts"] += 1
        # Waited: its answer says so (Preference-Applied). A key that finished before the burst
        # came answers replays at once.
        waited = [r for r in waiters if "preference-applied" in r.headers]
        counts["waiter_burst_waited"] += len(waited)
        if len(waited) > IDEMPOTENCY_MAX_WAITERS_PER_USER:
            bound_finding("waiters_unbounded", first, "%d of %d requests waited for key %s (bound %d)" % (
                len(waited), len(waiters), first.key, IDEMPOTENCY_MAX_WAITERS_PER_USER))
    log("hostile bounds: %d token bursts checked (%d excused, %d 401s in all), %d waiter bursts checked "
        "(%d waited in all)" % (counts["token_bursts"], counts["token_bursts_excused"], counts["token_burst_401s"],
                                counts["waiter_bursts"], counts["waiter_burst_waited"]))
    result = collections.OrderedDict()
    result["hostile_auth_unthrottled"] = counts["auth_unthrottled"]
    result["hostile_waiters_unbounded"] = counts["waiters_unbounded"]
    result["good_client_auth_throttled"] = len(h.auth_throttled)
    result["wrong_origin_ip"] = counts["wrong_origin_ip"]
    return result


def in_leader_fault(h, rec):
    """Whether a probe overlaps an HA fault that moves the leader (plus a grace)."""
    if not h.ha:
        return False
    grace = 2.0 * h.slow
    ended = rec.ended if rec.ended is not None else rec.sent
    return any(kind in HA_LEADER_FAULT_KINDS and rec.sent <= end + grace and ended >= start
               for kind, start, end in h.fault_windows)
