"""The HA profiles' checks on a recorded history (history.py): no client key charged twice, nothing
acknowledged lost, read from the provider's records, the clients' answers and the final leader's
database; and how long the clients saw no 2xx around the leader faults."""

import collections
import hashlib
import hmac
import json

from .base import clock, log


def derived_charge_key(secret, user_id, client_key):
    """The provider key a derived-key build sends for a charge (common/payments/provider_key.cpp)."""
    digest = hmac.new(secret.encode(), ("charge\n%d\n%s" % (user_id, client_key)).encode(),
                      hashlib.sha256).hexdigest()
    return "rr-ch-" + digest


def acknowledged(h):
    """What the clients were told: [(user id, client key, status, ride JSON, record)] for every
    201 to POST /rides and 200 to a cancel a good client or the hostile flood got."""
    out = []
    for rec in h.records:
        uid = h.user_ids[rec.user]
        for status, body in [(rec.status, rec.body)] + [(st, b) for st, b, _ in rec.extra]:
            if status in (200, 201) and body:
                try:
                    ride = json.loads(body).get("ride") or {}
                except (ValueError, AttributeError):
                    ride = {}
                out.append((uid, rec.key, status, ride, rec))
    hostile_id = h.user_ids[h.hostile_user[0]]
    for key, status, body in h.flood_answers:
        if status == 201:
            try:
                ride = json.loads(body).get("ride") or {}
            except (ValueError, AttributeError):
                ride = {}
            out.append((hostile_id, key, status, ride, None))
    return out


def check_ha(h, findings):
    """Double charges and lost acknowledged writes, from the provider's records, the clients'
    answers and the final leader's database (never the API's word):

    - every charge at the provider is attributed to a client key: through the final database
      (its provider key is a key row's, or its id a ride's), through an answer a client saw
      (the charge id of a 201), through the derived provider key recomputed from the client's
      key and user id (when the build derives them: PROVIDER_KEY_SECRET), or through its
      description (the key row id it names, if that row is the charged customer's);
      a client key with more than one charge is charged twice; a charge that the final database
      does not know and that no client saw acknowledged counts as a double charge as well;
    - every 201 a client saw has its ride in the final database, with that charge, under that
      client's key, and the charge at the provider; every 200 to a cancel has its ride cancelled
      with that refund."""
    keys, rides, charges = h.keys, h.rides, h.charges
    acked = acknowledged(h)
    keys_by_payment = {k["payment_idempotency_key"]: k for k in keys}
    keys_by_id = {k["id"]: k for k in keys}
    rides_by_id = {r["id"]: r for r in rides}
    rides_by_charge = {r["stripe_charge_id"]: r for r in rides if r["stripe_charge_id"]}
    charges_by_id = {c["id"]: c for c in charges}
    customer_of = {h.user_ids[u[0]]: u[1] for u in h.users}
    customer_of[h.user_ids[h.hostile_user[0]]] = h.hostile_user[1]
    seen = {}
    for uid, key, status, ride, _rec in acked:
        if status == 201 and ride.get("stripe_charge_id"):
            seen[ride["stripe_charge_id"]] = (uid, key)
    derived = {}
    if h.provider_key_secret:
        sent = {(h.user_ids[r.user], r.key) for r in h.records if r.ride_id is None}
        sent |= {(h.user_ids[h.hostile_user[0]], k) for k in h.flood_keys}
        for uid, key in sent:
            derived[derived_charge_key(h.provider_key_secret, uid, key)] = (uid, key)
    owners = collections.defaultdict(list)
    double = 0
    attributed = collections.Counter()
    prefix = "Rocket Rides ride (request "
    for c in charges:
        k = keys_by_payment.get(c["idempotency_key"])
        r = rides_by_charge.get(c["id"])
        known = k is not None or r is not None
        owner, how = None, None
        if k is not None:
            owner, how = (k["user_id"], k["idempotency_key"]), "final database (provider key)"
        elif r is not None and keys_by_id.get(r["idempotency_key_id"]):
            k2 = keys_by_id[r["idempotency_key_id"]]
            owner, how = (k2["user_id"], k2["idempotency_key"]), "final database (ride)"
        elif c["id"] in seen:
            owner, how = seen[c["id"]], "a client's 201"
        elif c["idempotency_key"] in derived:
            owner, how = derived[c["idempotency_key"]], "derived provider key"
        else:
            desc = c.get("description", "")
            if desc.startswith(prefix) and desc.endswith(")") and desc[len(prefix):-1].isdigit():
                k2 = keys_by_id.get(int(desc[len(prefix):-1]))
                if k2 is not None and customer_of.get(k2["user_id"]) == c.get("customer"):
                    owner, how = (k2["user_id"], k2["idempotency_key"]), "description"
        attributed[how or "nothing"] += 1
        if not known and c["id"] not in seen:
            double += 1
            findings["double_charges"].append(
                "charge %s (provider key %s, customer %s, %r) is unknown to the final database and no client "
                "saw it acknowledged%s" % (c["id"], c["idempotency_key"], c.get("customer"), c.get("description"),
                                           "; by its %s it is client key %s's" % (how, owner[1]) if owner else ""))
            continue
        if owner is not None:
            owners[owner].append(c)
    for (uid, key), group in sorted(owners.items()):
        if len(group) > 1:
            double += len(group) - 1
            findings["double_charges"].append("client key %s (user %d) charged %d times: %s" % (
                key, uid, len(group), ", ".join("%s (provider key %s)" % (c["id"], c["idempotency_key"])
                                                for c in group)))
    lost = 0
    lost_keys = set()
    for uid, key, status, ride, rec in acked:
        if (uid, key) in lost_keys:
            continue
        problem = None
        if status == 201:
            r = rides_by_id.get(ride.get("id"))
            k = keys_by_id.get(r["idempotency_key_id"]) if r else None
            if r is None:
                problem = "ride %s is not in the final database" % ride.get("id")
            elif r["stripe_charge_id"] != ride.get("stripe_charge_id"):
                problem = "ride %s records charge %s, the client saw %s" % (
                    r["id"], r["stripe_charge_id"], ride.get("stripe_charge_id"))
            elif k is None or (k["user_id"], k["idempotency_key"]) != (uid, key):
                problem = "ride %s belongs to key row %s, not to this client key" % (r["id"], r["idempotency_key_id"])
            elif ride.get("stripe_charge_id") not in charges_by_id:
                problem = "charge %s of ride %s is not at the provider" % (ride.get("stripe_charge_id"), r["id"])
        elif rec is not None and rec.ride_id is not None:
            r = rides_by_id.get(rec.ride_id)
            if r is None:
                problem = "cancelled ride %s is not in the final database" % rec.ride_id
            elif not r["cancelled"] or r["stripe_refund_id"] != ride.get("stripe_refund_id"):
                problem = "ride %s: cancelled=%s refund %s, the client saw refund %s" % (
                    r["id"], r["cancelled"], r["stripe_refund_id"], ride.get("stripe_refund_id"))
        if problem:
            lost += 1
            lost_keys.add((uid, key))
            findings["lost_acknowledged"].append("client key %s (user %d) answered %d: %s" % (
                key, uid, status, problem))
    log("charges attributed by: %s" % ", ".join("%s=%d" % kv for kv in sorted(attributed.items())))
    out = collections.OrderedDict()
    out["failovers"] = h.failovers
    out["double_charges"] = double
    out["lost_acknowledged"] = lost
    unavailable = unavailability(h)
    out.update(unavailable)
    out["final_leader"] = h.final_leader
    out["leader_faults"] = len(h.failover_events)
    out["acknowledged"] = len(acked)
    return out


def unavailability(h):
    """max_unavailable_s: the longest span of the traffic with no 2xx to any good client;
    p50_unavailable_s: the median over the leader faults that moved the leader of the time from
    the fault to the first 2xx that wrote (not a replay) to a request sent after the fault and
    answered once the new leader was seen."""
    oks = sorted(h.ok_times, key=lambda o: o[1])
    begin, end = h.traffic_window
    longest, at, last = 0.0, begin, begin
    for _sent, ended, _replayed in oks:
        if ended < begin or ended > end:
            continue
        if ended - last > longest:
            longest, at = ended - last, last
        last = ended
    if end - last > longest:
        longest, at = end - last, last
    spans = []
    for kind, fault, old, new, seen in h.failover_events:
        if new is None:
            continue
        first = next((ended for sent, ended, replayed in oks
                      if sent >= fault and ended >= seen and not replayed), None)
        if first is None:
            log("unavailability: no 2xx after the %s of %s at %s" % (kind, old, clock(fault)))
            first = end
        spans.append(first - fault)
        log("unavailability: %s of %s at %s: %s leads after %.1fs, first 2xx after %.1fs" % (
            kind, old, clock(fault), new, seen - fault, first - fault))
    log("longest span without a 2xx: %.1fs from %s" % (longest, clock(at)))
    spans.sort()
    median = (spans[len(spans) // 2] if len(spans) % 2 else (spans[len(spans) // 2 - 1] + spans[len(spans) // 2]) / 2
              ) if spans else float("nan")
    return collections.OrderedDict([("max_unavailable_s", "%.1f" % longest), ("p50_unavailable_s", "%.1f" % median)])
