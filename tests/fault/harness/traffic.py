"""The good clients: concurrent riders that book rides and cancel some, each retrying its own
Idempotency-Key until a final answer (or walking away, tapping twice, resending), recording every
answer they saw for the checker."""

import collections
import http.client
import json
import random
import threading
import time
import traceback
import urllib.parse
import uuid

from .hostile_wire import AUTH_THROTTLED
from .net import KeptConnection, http_call


def final_codes(path):
    """The answers a good client's request may end with: POST /rides 201 or 402 (declined); a
    cancel of the client's own paid ride 200 (refunded, or already cancelled by its other key)."""
    return (200,) if path.endswith("/cancel") else (201, 402)


class KeyRecord:
    __slots__ = ("key", "user", "params", "path", "ride_id", "status", "body", "attempts", "gave_up", "replayed",
                 "first", "last", "statuses", "extra")

    def __init__(self, key, user, params, path="/rides", ride_id=None):
        self.key = key
        self.user = user
        self.params = params
        self.path = path  # /rides, or /rides/{id}/cancel for a cancel of ride_id
        self.ride_id = ride_id
        self.status = None
        self.body = None
        self.attempts = 0
        self.gave_up = False
        self.replayed = False
        self.first = time.time()
        self.last = None
        self.statuses = collections.Counter()
        self.extra = []  # (status, body, replayed) final answers of a second tap or a later resend


def random_ride_params(rng):
    """A ride's four coordinates as POST /rides takes them, each drawn from rng."""
    return [("origin_lat", "%.6f" % rng.uniform(-80, 80)), ("origin_lon", "%.6f" % rng.uniform(-170, 170)),
            ("target_lat", "%.6f" % rng.uniform(-80, 80)), ("target_lon", "%.6f" % rng.uniform(-170, 170))]


def start_threads(count, target, name):
    """`count` daemon threads running target(index), named name-index."""
    threads = []
    for i in range(count):
        t = threading.Thread(target=target, args=(i,), name="%s-%d" % (name, i), daemon=True)
        t.start()
        threads.append(t)
    return threads


def join_threads(threads, timeout):
    """Joins them all within one deadline; True when none is still running."""
    deadline = time.time() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.time()))
    return all(not t.is_alive() for t in threads)


class Traffic:
    def __init__(self, api_ports, users, clients, seed, give_up, request_timeout, keep_alive=False):
        self.api_ports = api_ports
        # keep_alive: every other client keeps one connection open across its requests (an app
        # on keep-alive, which makes HAProxy reuse its connections to the APIs); the others, and
        # every second tap or resend, open a connection per request.
        self.keep_alive = keep_alive
        self.users = users  # list of (email, customer, token, declines)
        self.clients = clients
        self.seed = seed
        self.give_up = give_up
        self.request_timeout = request_timeout
        # The share of 201 rides their rider then cancels (POST /rides/{id}/cancel).
        self.cancel_share = 0.25
        self.stop_new = threading.Event()
        self.abort = threading.Event()
        self.lock = threading.Lock()
        self.records = []
        self.requests = 0
        self.in_flight = 0
        self.threads = []
        self.racers = []
        self.errors = []
        # Every request that ended in a connection error, a timeout or a 5xx:
        # (sent, ended, status or None, key).
        self.client_errors = []
        # Every 2xx a client got: (sent, ended, replayed), for the HA profiles' unavailability.
        self.ok_times = []
        # Every 429 a good client got for its address's failed authentications: (sent, key). There
        # must be none: only the hostile client's address fails to authenticate.
        self.auth_throttled = []

    def _throttled(self, sent, status, data, key):
        if status == 429 and AUTH_THROTTLED in data:
            with self.lock:
                self.auth_throttled.append((sent, key))

    def _ok(self, sent, status, replayed):
        if status is not None and 200 <= status < 300:
            with self.lock:
                self.ok_times.append((sent, time.time(), replayed))

    def _note(self, sent, status, key):
        if status is None or status >= 500:
            with self.lock:
                self.client_errors.append((sent, time.time(), status, key))

    def start(self):
        self.threads = start_threads(self.clients, self._client, "client")

    def join(self, timeout):
        """The clients, then the racing cancels they started (none starts once the clients are done)."""
        deadline = time.time() + timeout
        done = join_threads(self.threads, timeout)
        with self.lock:
            racers = list(self.racers)
        return join_threads(racers, max(0.0, deadline - time.time())) and done

    def _client(self, index):
        rng = random.Random("%s-client-%d" % (self.seed, index))
        kept = KeptConnection() if self.keep_alive and index % 2 == 1 else None
        try:
            while not self.stop_new.is_set() and not self.abort.is_set():
                self._one_key(rng, kept)
                # A short think time between rides.
                self.abort.wait(rng.uniform(0.0, 0.3))
        except Exception:
            with self.lock:
                self.errors.append(traceback.format_exc())

    def _one_key(self, rng, kept=None):
        # About one ride in seven is for the declining customer; the rest pay.
        declining = [u for u in self.users if u[3]]
        paying = [u for u in self.users if not u[3]]
        user = rng.choice(declining) if declining and rng.random() < 0.15 else rng.choice(paying)
        params = random_ride_params(rng)
        record = self._send(rng, kept, user, KeyRecord(self._new_key(rng), user[0], params))
        # Some riders cancel their ride, which refunds its charge: a new key, with its own retries,
        # walk-aways, double taps and resends; now and then a second cancel of the same ride races
        # it under another key, and the provider must refund the ride once.
        if record.status == 201 and rng.random() < self.cancel_share:
            ride_id = json.loads(record.body)["ride"]["id"]
            path = "/rides/%d/cancel" % ride_id
            if rng.random() < 0.2:
                racer = KeyRecord(self._new_key(rng), user[0], [("reason", "changed plans")], path, ride_id)
                thread = threading.Thread(target=self._send, args=(random.Random(rng.random()), None, user, racer),
                                          daemon=True)
                with self.lock:
                    self.racers.append(thread)
                thread.start()
            self._send(rng, kept, user, KeyRecord(self._new_key(rng), user[0], [("reason", "changed plans")], path,
                                                  ride_id))

    @staticmethod
    def _new_key(rng):
        return "fault-%s" % uuid.UUID(int=rng.getrandbits(128)).hex

    def _send(self, rng, kept, user, record):
        """Sends record's request until it gets a final answer or its client gives up; returns it."""
        body = urllib.parse.urlencode(record.params)
        key = record.key
        with self.lock:
            self.records.append(record)
        headers = {"Authorization": "Bearer " + user[2], "Idempotency-Key": key,
                   "Content-Type": "application/x-www-form-urlencoded"}
        # Some clients walk away after their first try (an app killed mid-request): the
        # completer must finish their keys.
        walk_away = rng.random() < 0.05
        # Some tap twice: a second request on the same key races the first.
        double_tap = rng.random() < 0.05
        # Some send the request once more after their answer (the answer was lost on the way):
        # the replay must be the same bytes.
        resend = rng.random() < 0.05
        attempt = 0
        while not self.abort.is_set():
            attempt += 1
            record.attempts += 1
            port = rng.choice(self.api_ports)
            timeout = rng.uniform(0.05, 0.5) if walk_away else self.request_timeout
            if double_tap and attempt == 1:
                threading.Thread(target=self._send_quietly,
                                 args=(record, rng.choice(self.api_ports), body, headers), daemon=True).start()
            with self.lock:
                self.requests += 1
                self.in_flight += 1
            sent = time.time()
            try:
                if kept is not None:
                    status, response_headers, data = kept.call(port, "POST", record.path, body, headers, timeout)
                else:
                    status, response_headers, data = http_call(port, "POST", record.path, body, headers, timeout)
            except (OSError, http.client.HTTPException):
                status, response_headers, data = None, {}, b""
            finally:
                with self.lock:
                    self.in_flight -= 1
            if not walk_away:  # a walk-away's own short timeout is no error of the system's
                self._note(sent, status, key)
            record.last = time.time()
            record.statuses[status] += 1
            self._ok(sent, status, response_headers.get("idempotent-replayed") == "true")
            self._throttled(sent, status, data, key)
            # 409 (key in flight) and 429 (too many of this user's requests in progress) are
            # "retry later", not answers.
            if status is not None and (200 <= status < 300 or (400 <= status < 500 and status not in (409, 429))):
                record.status = status
                record.body = data
                record.replayed = response_headers.get("idempotent-replayed") == "true"
                if resend:
                    self.abort.wait(rng.uniform(0.0, 1.0))
                    self._send_quietly(record, rng.choice(self.api_ports), body, headers)
                return record
            if walk_away or time.time() - record.first > self.give_up:
                record.gave_up = True
                return record
            # Exponential backoff with full jitter (capped at 2 s), so that clients do not retry in
            # step; Retry-After is not waited out in full, to keep many retries inside a fault.
            base = min(2.0, 0.05 * (2 ** min(attempt, 8)))
            self.abort.wait(rng.uniform(0.02, base))
        return record

    def _send_quietly(self, record, port, body, headers):
        """One more request on a key; a final answer to it is checked like the main one."""
        with self.lock:
            self.requests += 1
        sent = time.time()
        try:
            status, response_headers, data = http_call(port, "POST", record.path, body, headers, self.request_timeout)
        except (OSError, http.client.HTTPException):
            self._note(sent, None, record.key)
            return
        self._note(sent, status, record.key)
        self._ok(sent, status, response_headers.get("idempotent-replayed") == "true")
        self._throttled(sent, status, data, record.key)
        if 200 <= status < 300 or (400 <= status < 500 and status not in (409, 429)):
            with self.lock:
                record.extra.append((status, data, response_headers.get("idempotent-replayed") == "true"))
