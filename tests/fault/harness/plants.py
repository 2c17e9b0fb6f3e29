"""The checker's self-test: violations planted behind the product's back after quiescing (a second
charge, a lost job, a stuck key, a changed stored answer, refunds of no ride, hostile answers and
rows, the bounds broken; over the Patroni cluster a second charge and a lost acknowledged ride),
each of which the checker must then name (--plant-violations, --self-test)."""

import json
import time
import urllib.parse
import uuid

from .base import STRIPE_KEY, HarnessError, clock, log
from .checker_ha import acknowledged
from .history import History
from .hostile_wire import (AUTH_FAILURES_PER_MINUTE, HOSTILE_ADDRESS, HOSTILE_PREFIX, IDEMPOTENCY_MAX_WAITERS_PER_USER,
                           HostileRecord)
from .net import http_call


class Plants:
    """The Suite's plants (a mixin: what it breaks lives on the Suite and in its servers)."""

    def plant_violations(self):
        """Breaks each invariant once, behind the product's back, so that a run shows the
        checker finds them (--plant-violations; the run passes only if all are reported)."""
        # The daemons would repair what we break (the completer re-drives a stuck key): stop them.
        for d in self.completers + self.enqueuers:
            d.stop(grace=10.0)
        # The good clients' keys (the hostile user's flood has 201s too; its plants are below).
        # Rides no cancel has touched: a refund planted below on a ride its rider cancelled would be
        # refused (charge_already_refunded), whichever seed chose the traffic.
        paid = self.servers.psql_json(
            "SELECT k.id, k.user_id, k.idempotency_key FROM idempotency_keys k JOIN rides r ON r.idempotency_key_id = k.id "
            "WHERE k.response_code = 201 AND k.user_id <> %d AND r.cancelled_at IS NULL AND NOT EXISTS ("
            "SELECT 1 FROM idempotency_keys c WHERE c.request_path = '/rides/' || r.id || '/cancel') "
            "ORDER BY k.id LIMIT 3" % self.user_ids[self.hostile_user[0]])
        if len(paid) < 3:
            raise HarnessError("too few paid keys to plant violations")
        customer = next(u[1] for u in self.users if not u[3])
        # 1. A second charge for a paid request, under another provider idempotency key.
        body = urllib.parse.urlencode([("amount", "100"), ("currency", "usd"), ("customer", customer),
                                       ("description", "Rocket Rides ride")])
        status, _, data = http_call(self.mock_port, "POST", "/v1/charges", body, {
            "Authorization": "Bearer " + STRIPE_KEY, "Idempotency-Key": "planted-" + uuid.uuid4().hex,
            "Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
        if status != 200:
            raise HarnessError("planting a charge: %d %r" % (status, data[:200]))
        # 2. A lost job: remove the job of the second paid key's ride from Redis.
        ride = self.servers.psql("SELECT id FROM rides WHERE idempotency_key_id = %d" % paid[1]["id"]).strip()
        out = self.servers.redis_cli("--raw", "LRANGE", "queue:default", "0", "-1", timeout=60).stdout.decode()
        for line in out.splitlines():
            try:
                job = json.loads(line)
            except ValueError:
                continue
            if job.get("args") and isinstance(job["args"][0], dict) and str(job["args"][0].get("ride_id")) == ride:
                self.servers.redis_cli("LREM", "queue:default", "0", line)
        # 8. Two refunds of one charge, neither under its ride's refund key (partial ones, which the
        # provider accepts for a charge not refunded in full).
        charge = self.servers.psql("SELECT stripe_charge_id FROM rides WHERE idempotency_key_id = %d"
                                   % paid[1]["id"]).strip()
        for _ in range(2):
            body = urllib.parse.urlencode([("charge", charge), ("amount", "100")])
            status, _, data = http_call(self.mock_port, "POST", "/v1/refunds", body, {
                "Authorization": "Bearer " + STRIPE_KEY, "Idempotency-Key": "planted-" + uuid.uuid4().hex,
                "Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
            if status != 200:
                raise HarnessError("planting a refund: %d %r" % (status, data[:200]))
        log("planted: two refunds of charge %s under keys of no ride" % charge)
        # 3. A stuck key, and 4. a stored answer that differs from the client's.
        self.servers.psql("UPDATE idempotency_keys SET recovery_point = 'charge_created', response_code = NULL, "
                          "response_body = NULL, locked_at = now() WHERE id = %d" % paid[2]["id"])
        self.servers.psql("UPDATE idempotency_keys SET response_body = response_body || ' ' "
                          "WHERE id = (SELECT max(id) FROM idempotency_keys WHERE response_code = 402)")
        log("planted: a second charge for key %d, the lost job of key %d, key %d unfinished and locked, "
            "a changed stored 402" % (paid[0]["id"], paid[1]["id"], paid[2]["id"]))
        # 6. A smuggling probe straight to an API that got a 500 and then a second answer, and
        # 7. a key row with the invalid-shape prefix (as if an invalid request had written it).
        planted = HostileRecord("smuggle", self.apis[0].port, True, {400}, strict=True, detail="planted")
        planted.ended = planted.sent + 0.01
        planted.closed = True
        planted.answers = [(500, True, b'{"error":{"type":"api_error","message":"planted"}}'),
                           (200, True, b'{"status":"ok"}')]
        self.hostile._add(planted)
        self.servers.psql(
            "INSERT INTO idempotency_keys (idempotency_key, locked_at, request_method, request_params, request_path, "
            "response_code, response_body, recovery_point, user_id, origin_ip) VALUES ('%splanted-%s', NULL, 'POST', '{}', "
            "'/rides', 402, '{}', 'finished', %d, '%s')" % (HOSTILE_PREFIX, uuid.uuid4().hex,
                                                            self.user_ids[self.hostile_user[0]], HOSTILE_ADDRESS))
        log("planted: a 500 and a second answer on a smuggling connection, a key row with the prefix %s"
            % HOSTILE_PREFIX)
        # 8. The bounds: a burst of unknown tokens answered 401 one more time than the bound lets
        # through, a good client's 429 for failed authentications, a key row stored with another
        # address than its client's, and one waiter more than IDEMPOTENCY_MAX_WAITERS_PER_USER.
        now = time.time()

        def answered(kind, status, body, key=None, ended=now + 0.01):
            record = HostileRecord(kind, self.apis[0].port, True, {status}, strict=False, key=key, detail="planted")
            record.sent, record.ended = now, ended
            record.answers = [(status, True, body)]
            return record

        self.hostile.token_bursts.append((1, [answered("token_flood", 401, b'{"error":{}}')
                                              for _ in range(2 * AUTH_FAILURES_PER_MINUTE + 1)]))
        with self.traffic.lock:
            self.traffic.auth_throttled.append((now, "planted"))
        self.servers.psql("UPDATE idempotency_keys SET origin_ip = '192.0.2.1' WHERE id = %d" % paid[0]["id"])
        first = answered("waiter_flood", 201, b"{}", key="planted", ended=now + 0.5)
        waiters = [answered("waiter_flood", 201, b"{}", key="planted", ended=now + 0.5)
                   for _ in range(IDEMPOTENCY_MAX_WAITERS_PER_USER + 1)]
        for waiter in waiters:
            waiter.headers["preference-applied"] = "wait=2"  # each says it waited for the key
        self.hostile.waiter_bursts.append((first, waiters))
        log("planted: %d 401s in one token burst, a good client's 429 for failed authentications, origin_ip "
            "192.0.2.1 on key %d, %d waiters on one key" % (2 * AUTH_FAILURES_PER_MINUTE + 1, paid[0]["id"],
                                                            IDEMPOTENCY_MAX_WAITERS_PER_USER + 1))
        if self.cluster:
            # 5. A client that saw a 502 in the middle of a rolling restart.
            if not self.rolling_windows:
                raise HarnessError("no rolling restart to plant a client error in")
            start, end = self.rolling_windows[0]
            middle = (start + end) / 2
            with self.traffic.lock:
                self.traffic.client_errors.append((middle, middle + 0.01, 502, "planted"))
            log("planted: a 502 at %s, inside the rolling restart of %s-%s" % (
                clock(middle), clock(start), clock(end)))

    def plant_ha_violations(self):
        """--plant-violations over the Patroni cluster: after quiescing, on the final leader and at
        the provider, one extra charge for a client key the clients used (a second provider key,
        as a lost commit's retry would make) and the deletion of a ride whose 201 a client saw.
        The run must then print RESULT FAIL naming both; returns [(finding, what names it)]."""
        told = acknowledged(History(records=list(self.traffic.records), user_ids=self.user_ids,
                                    hostile_user=self.hostile_user, flood_answers=list(self.hostile.flood_answers)))
        acked = [(uid, key, ride, rec) for uid, key, status, ride, rec in told
                 if status == 201 and rec is not None and ride.get("id")]
        cancelled = {rec.ride_id for rec in self.traffic.records if rec.ride_id is not None}
        acked = [a for a in acked if a[2]["id"] not in cancelled]
        if len(acked) < 2:
            raise HarnessError("too few acknowledged rides to plant violations")
        (uid, key, _, rec), (_, key2, ride2, _) = acked[0], acked[-1]
        row = self.servers.psql_json("SELECT id FROM idempotency_keys WHERE user_id = %d AND idempotency_key = '%s'"
                                     % (uid, key.replace("'", "''")))
        customer = next(u[1] for u in self.users if u[0] == rec.user)
        body = urllib.parse.urlencode([("amount", "100"), ("currency", "usd"), ("customer", customer),
                                       ("description", "Rocket Rides ride (request %s)" % (row[0]["id"] if row else 0))])
        status, _, data = http_call(self.mock_port, "POST", "/v1/charges", body, {
            "Authorization": "Bearer " + STRIPE_KEY, "Idempotency-Key": "planted-" + uuid.uuid4().hex,
            "Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
        if status != 200:
            raise HarnessError("planting a charge: %d %r" % (status, data[:200]))
        charge = json.loads(data)["id"]
        # The ledger is insert-only (sql/016): a lost commit takes its rows, which only a session
        # that skips triggers (as a replica applying changes does) can delete.
        self.servers.psql("BEGIN; SET LOCAL session_replication_role = replica; "
                          "DELETE FROM provider_refunds WHERE ride_id = %d; DELETE FROM provider_charges WHERE ride_id = %d; "
                          "DELETE FROM rides WHERE id = %d; COMMIT" % ((int(ride2["id"]),) * 3))
        log("planted: a second charge %s for client key %s, ride %s of client key %s (acknowledged 201) deleted "
            "from the final leader %s" % (charge, key, ride2["id"], key2, self.servers.pinned))
        return [("double_charges", charge), ("lost_acknowledged", "ride %s " % ride2["id"])]
