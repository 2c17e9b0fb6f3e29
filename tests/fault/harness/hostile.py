"""The hostile client: threads that send, beside the good clients, the probes the API defends
against (docs/http-api.md, "Hostile clients"), and record every answer for the checker."""

import collections
import random
import threading
import time
import traceback
import urllib.parse
import uuid

from .hostile_wire import (AUTH_FAILURES_PER_MINUTE, HOSTILE_ADDRESS, HOSTILE_FLOOD_PREFIX, HOSTILE_PREFIX,
                           IDEMPOTENCY_MAX_WAITERS_PER_USER, PIPELINED, TCHARS, HostileRecord, from_api,
                           parse_responses)
from .traffic import join_threads, random_ride_params, start_threads


class Hostile:
    """A hostile client beside the good ones: threads that send, at random, the probes the API
    defends against (see docs/http-api.md, "Hostile clients"), and record every answer for the checker.
    It uses a user of its own (so it never touches the good users' keys) or no valid token."""

    def __init__(self, ports, direct_ports, token, seed, threads, request_timeout, slow):
        self.ports = ports  # where the good clients go (the APIs, or HAProxy)
        self.direct_ports = direct_ports  # the APIs themselves (equal to ports without HAProxy)
        self.token = token
        self.seed = seed
        self.thread_count = threads
        self.request_timeout = request_timeout
        self.slow = slow
        # The share of 201 rides their rider then cancels (POST /rides/{id}/cancel).
        self.cancel_share = 0.25
        self.stop_new = threading.Event()
        self.abort = threading.Event()
        # Set by the suite while it holds the provider slow (mock_hang, api_kill_in_flight): the
        # hostile client floods then, so its requests hold workers on the provider.
        self.provider_slow = threading.Event()
        self.lock = threading.Lock()
        self.records = []
        self.flood_keys = {}  # key -> params of every valid key the hostile user sent
        self.flood_answers = []  # (key, status, body) of final answers (201/402) to the flood
        self.token_bursts = []  # (APIs it could reach, [records]) of each flood of unknown tokens
        self.waiter_bursts = []  # (the key's first request, [records of its waiters]) of each waiter flood
        self.kinds = collections.Counter()
        self.threads = []
        self.errors = []

    def start(self):
        self.threads = start_threads(self.thread_count, self._run, "hostile")

    def join(self, timeout):
        return join_threads(self.threads, timeout)

    def _run(self, index):
        rng = random.Random("%s-hostile-%d" % (self.seed, index))
        probes = [(self.long_method, 3), (self.smuggle, 6), (self.idle, 1), (self.drip, 2), (self.flood, 1),
                  (self.invalid, 6), (self.token_flood, 1), (self.waiter_flood, 1)]
        try:
            while not self.stop_new.is_set() and not self.abort.is_set():
                if self.provider_slow.is_set() and rng.random() < 0.5:
                    probe = rng.choice([self.flood, self.waiter_flood])
                else:
                    probe = rng.choices([p for p, _ in probes], weights=[w for _, w in probes])[0]
                probe(rng)
                self.abort.wait(rng.uniform(0.0, 0.2))
        except Exception:
            with self.lock:
                self.errors.append(traceback.format_exc())

    def _add(self, record):
        with self.lock:
            self.records.append(record)
            self.kinds[record.kind] += 1

    def _key(self, rng, prefix=HOSTILE_PREFIX):
        return prefix + uuid.UUID(int=rng.getrandbits(128)).hex

    def _auth(self, rng):
        """The hostile user's token, mostly; sometimes none or one that is no token at all."""
        r = rng.random()
        if r < 0.75:
            return "Authorization: Bearer %s\r\n" % self.token, False
        if r < 0.9:
            return "", True
        return "Authorization: Bearer hostile-%s\r\n" % uuid.UUID(int=rng.getrandbits(128)).hex, True

    @staticmethod
    def _unauthenticated(auth):
        """What a request without a valid token may get: 401, and for a token that is no token
        also 429 once this address is past AUTH_FAILURES_PER_MINUTE."""
        return {401, 429} if "Bearer hostile-" in auth else {401}

    # -- the exchange ---------------------------------------------------------------------------

    def exchange(self, record, data, drip=None, read_to_close=False):
        """Sends data on a fresh connection (drip: (rng, seconds) to feed it in small pieces over
        that long), reads the answers, and fills in the record. read_to_close: keep reading until
        the server closes or the deadline, to see any second answer and whether it closes."""
        import socket
        deadline = time.time() + self.request_timeout
        sock = None
        got = b""
        try:
            sock = socket.create_connection(("127.0.0.1", record.port), timeout=self.request_timeout,
                                            source_address=(HOSTILE_ADDRESS, 0))
            record.sent = time.time()
            if drip:
                rng, seconds = drip
                pieces = []
                at = 0
                while at < len(data):
                    n = rng.randint(1, 12)
                    pieces.append(data[at:at + n])
                    at += n
                pause = seconds / max(1, len(pieces))
                for piece in pieces:
                    sock.sendall(piece)
                    time.sleep(pause)
                deadline = time.time() + self.request_timeout
            else:
                sock.sendall(data)
            while True:
                remaining = deadline - time.time()
                if remaining <= 0:
                    record.closed = False
                    break
                sock.settimeout(remaining)
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    record.closed = False
                    break
                if not chunk:
                    record.closed = True
                    break
                got += chunk
                if not read_to_close:
                    answers, _ = parse_responses(got)
                    if answers:
                        break
                else:
                    answers, _ = parse_responses(got)
                    if len(answers) >= 2 and not record.direct:
                        break  # HAProxy answered the pipelined request too (see check_hostile)
                    if answers:
                        # The answer is complete: a closing server closes at once.
                        deadline = min(deadline, time.time() + 2.0 * self.slow)
        except OSError as e:
            record.error = "%s: %s" % (type(e).__name__, e)
        finally:
            if sock is not None:
                sock.close()
            record.ended = time.time()
        answers, rest = parse_responses(got)
        record.answers = [(status, from_api(headers, body), body) for status, headers, body in answers]
        record.headers = answers[0][1] if answers else {}
        record.rest = rest
        if not answers and record.error is None:
            record.error = "no complete answer (%d bytes%s)" % (len(got), ", closed" if record.closed else "")
        self._add(record)
        return record

    def _target(self, rng):
        """Where a probe goes: where the good clients go, and through HAProxy now and then
        straight to an API (only there can one see what the API itself does with a shape)."""
        if self.direct_ports != self.ports and rng.random() < 0.5:
            return rng.choice(self.direct_ports), True
        return rng.choice(self.ports), self.direct_ports == self.ports

    # -- the probes -----------------------------------------------------------------------------

    def long_method(self, rng):
        """A method of 200 to 4000 bytes on a random path: 405 on a route, 404 elsewhere; its
        text must never become a metric label (docs/http-api.md: at most 4,096 series)."""
        method = "".join(rng.choice(TCHARS) for _ in range(rng.randint(200, 4000)))
        routes = ["/rides", "/rides/%d" % rng.randint(1, 10 ** 9), "/healthz", "/readyz", "/"]
        others = ["/metrics", "/%s" % "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-._~/")
                                                     for _ in range(rng.randint(1, 600)))]
        path = rng.choice(routes + others)
        expected = {405} if path in routes else {404}
        if path.startswith("/rides/"):
            expected = {405}
        port, direct = self._target(rng)
        auth, _ = self._auth(rng)
        data = ("%s %s HTTP/1.1\r\nHost: rocket-rides\r\n%sContent-Length: 0\r\n\r\n" % (method, path, auth)).encode()
        self.exchange(HostileRecord("long_method", port, direct, expected, strict=False,
                                    detail="%d-byte method on %s" % (len(method), path[:40])), data)

    def smuggle(self, rng):
        """A framing shape two parsers could read differently, with a request pipelined behind it:
        exactly one answer (the status in docs/http-api.md) and a closed connection."""
        port, direct = self._target(rng)
        shape = rng.choice(["te_gzip", "te_chunked_gzip", "te_and_cl", "te_and_cl_smuggle", "http10_te", "two_hosts",
                            "no_host", "expect_foo", "content_encoding"])
        # HAProxy serves Transfer-Encoding with Content-Length itself (RFC 9112 section 6.3): it
        # drops the Content-Length, forwards the chunked body and closes the client's connection
        # after the answer. The API then gets a valid request, which it serves and, for a valid
        # body, charges: so through HAProxy this shape sends a valid key of the hostile user's
        # own (its row is checked like the flood's), not an invalid-shape one.
        normalized = shape.startswith("te_and_cl") and not direct
        key = self._key(rng, HOSTILE_FLOOD_PREFIX if normalized else HOSTILE_PREFIX)
        auth, anonymous = self._auth(rng)
        if normalized and anonymous:
            auth = "Authorization: Bearer %s\r\n" % self.token
        form = urllib.parse.urlencode([("origin_lat", "1.5"), ("origin_lon", "2.5"), ("target_lat", "3.5"),
                                       ("target_lon", "4.5")]).encode()
        common = ("Host: rocket-rides\r\n%sIdempotency-Key: %s\r\n"
                  "Content-Type: application/x-www-form-urlencoded\r\n" % (auth, key)).encode()
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(form), form)
        shapes = {
            "te_gzip": (b"POST /rides HTTP/1.1\r\n" + common + b"Transfer-Encoding: gzip\r\n\r\n" + form, 400),
            "te_chunked_gzip": (b"POST /rides HTTP/1.1\r\n" + common + b"Transfer-Encoding: chunked, gzip\r\n\r\n"
                                + chunked, 400),
            "te_and_cl": (b"POST /rides HTTP/1.1\r\n" + common + b"Content-Length: %d\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n" % len(chunked) + chunked, 400),
            "te_and_cl_smuggle": (b"POST /rides HTTP/1.1\r\n" + common + b"Content-Length: %d\r\n"
                                  b"Transfer-Encoding: chunked\r\n\r\n" % (5 + len(PIPELINED)) + b"0\r\n\r\n", 400),
            "http10_te": (b"POST /rides HTTP/1.0\r\n" + common + b"Transfer-Encoding: chunked\r\n\r\n" + chunked, 400),
            "two_hosts": (b"GET /rides HTTP/1.1\r\nHost: rocket-rides\r\nHost: other.example\r\n"
                          + auth.encode() + b"\r\n", 400),
            "no_host": (b"POST /rides HTTP/1.1\r\n" + common.replace(b"Host: rocket-rides\r\n", b"")
                        + b"Content-Length: %d\r\n\r\n" % len(form) + form, 400),
            "expect_foo": (b"POST /rides HTTP/1.1\r\n" + common + b"Expect: foo\r\nContent-Length: %d\r\n\r\n"
                           % len(form) + form, 417),
            "content_encoding": (b"POST /rides HTTP/1.1\r\n" + common + b"Content-Encoding: gzip\r\n"
                                 b"Content-Length: %d\r\n\r\n" % len(form) + form, 415),
        }
        data, status = shapes[shape]
        # Straight to an API: exactly the status in docs/http-api.md, one answer, closed. Through HAProxy,
        # which frames requests itself: HAProxy refuses the framing shapes itself (400, HTML) or
        # passes a shape it normalized (TE with CL: it drops the CL), so the API answers a 4xx of
        # the request it got; HAProxy keeps the client's connection and answers the pipelined
        # request on a fresh connection to an API (see check_hostile).
        expected = {status} if direct else set(range(400, 500))
        if normalized:
            with self.lock:
                self.flood_keys[key] = form
            expected |= {201, 402, 409, 429, 503}
        record = self.exchange(HostileRecord("smuggle", port, direct, expected, strict=True, key=key,
                                             detail=shape + (" (normalized by HAProxy)" if normalized else "")),
                               data + PIPELINED, read_to_close=True)
        if normalized and record.answers and record.answers[0][0] in (201, 402):
            with self.lock:
                self.flood_answers.append((key, record.answers[0][0], record.answers[0][2]))

    def idle(self, rng):
        """A few dozen connections held open (some silent, some with half a request head) for a
        few seconds, then each request completed: 200 or a closed connection (one the API may
        have evicted to make room), never anything else."""
        import socket
        count = rng.randint(12, 32)
        hold = rng.uniform(1.0, 5.0)
        held = []
        for _ in range(count):
            port, direct = self._target(rng)
            record = HostileRecord("idle", port, direct, {200}, strict=False, detail="held %.1fs" % hold)
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=self.request_timeout)
            except OSError as e:
                record.error = "%s: %s" % (type(e).__name__, e)
                record.ended = time.time()
                self._add(record)
                continue
            half = rng.random() < 0.5
            if half:
                try:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: rocket-rides\r\n")
                except OSError:
                    pass
            held.append((sock, record, half))
        self.abort.wait(hold)
        for sock, record, half in held:
            got = b""
            try:
                sock.sendall(b"\r\n" if half else b"GET /healthz HTTP/1.1\r\nHost: rocket-rides\r\n\r\n")
                sock.settimeout(self.request_timeout)
                while not parse_responses(got)[0]:
                    chunk = sock.recv(65536)
                    if not chunk:
                        record.closed = True
                        break
                    got += chunk
            except OSError as e:
                record.error = "%s: %s" % (type(e).__name__, e)
            finally:
                sock.close()
            record.ended = time.time()
            answers, record.rest = parse_responses(got)
            record.answers = [(s, from_api(h, b), b) for s, h, b in answers]
            if not answers:
                # Closed while held (evicted, or HAProxy's request timeout): allowed, not counted.
                record.detail += ", closed before an answer"
            self._add(record)

    def drip(self, rng):
        """A request head fed a few bytes at a time over a few seconds (within HAProxy's 10 s for a
        head and the API's 30 s for a request): answered like any other."""
        auth, anonymous = self._auth(rng)
        if rng.random() < 0.5:
            data = ("GET /rides?limit=%d HTTP/1.1\r\nHost: rocket-rides\r\n%sConnection: close\r\n\r\n"
                    % (rng.randint(1, 5), auth)).encode()
            # 429 too: another hostile thread's flood may hold all of this user's places in
            # progress (API_MAX_IN_FLIGHT_PER_USER) while the head drips in.
            expected = self._unauthenticated(auth) if anonymous else {200, 429}
        else:
            key = self._key(rng)
            data = ("POST /rides HTTP/1.1\r\nHost: rocket-rides\r\n%sIdempotency-Key: %s\r\n"
                    "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
                    % (auth, key)).encode()
            # No parameters: 422; without a token 401, or 422 still (a token of the wrong user
            # is looked up only after the request is valid).
            expected = self._unauthenticated(auth) | {422} if anonymous else {422}
        port, direct = self._target(rng)
        seconds = rng.uniform(1.0, 4.0)
        self.exchange(HostileRecord("drip", port, direct, expected, strict=False,
                                    detail="%.1fs for %d bytes" % (seconds, len(data))), data, drip=(rng, seconds))

    def flood(self, rng):
        """Concurrent POST /rides from the hostile user's own token: a few keys, some sent by
        several requests at once. Only 201, 402, 409, 429 or 503."""
        keys = []
        for _ in range(rng.randint(4, 10)):
            key = self._key(rng, HOSTILE_FLOOD_PREFIX)
            params = random_ride_params(rng)
            with self.lock:
                self.flood_keys[key] = params
            keys.extend([(key, params)] * rng.choice([1, 1, 2, 3]))
        threads = []
        for key, params in keys:
            body = urllib.parse.urlencode(params)
            data = ("POST /rides HTTP/1.1\r\nHost: rocket-rides\r\nAuthorization: Bearer %s\r\n"
                    "Idempotency-Key: %s\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    "Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (self.token, key, len(body), body)).encode()
            port = rng.choice(self.ports)
            record = HostileRecord("flood", port, self.direct_ports == self.ports, {201, 402, 409, 429, 503},
                                   strict=False, key=key)
            t = threading.Thread(target=self._flood_one, args=(record, data), daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join(self.request_timeout + 10)

    def _flood_one(self, record, data):
        self.exchange(record, data)
        if record.answers and record.answers[0][0] in (201, 402):
            with self.lock:
                self.flood_answers.append((record.key, record.answers[0][0], record.answers[0][2]))

    def token_flood(self, rng):
        """Unknown bearer tokens one after another, more than AUTH_FAILURES_PER_MINUTE allows this
        address (the suite gives the APIs a low one): past it 429 with Retry-After, and never more
        401s than the bound lets through (checked in check_hostile, per burst)."""
        port, direct = self._target(rng)
        apis = 1 if direct else len(self.direct_ports)
        records = []
        for i in range((2 * AUTH_FAILURES_PER_MINUTE + 5) * apis):
            if self.abort.is_set():
                break
            # A token of the real form ("rr_" and 64 hex digits, common/auth/tokens.cpp), which only
            # the database can refuse: one of another form is refused without a lookup.
            token = "rr_%064x" % rng.getrandbits(256)
            data = ("GET /rides HTTP/1.1\r\nHost: rocket-rides\r\nAuthorization: Bearer %s\r\n"
                    "Connection: close\r\n\r\n" % token).encode()
            records.append(self.exchange(HostileRecord("token_flood", port, direct, {401, 429}, strict=False,
                                                       detail="#%d" % i), data))
        with self.lock:
            self.token_bursts.append((apis, records))

    def waiter_flood(self, rng):
        """One new key of the hostile user, then, while it is in flight, a burst of requests for it
        with Prefer: wait, straight to the API that runs it: at most IDEMPOTENCY_MAX_WAITERS_PER_USER
        of them wait, the rest get 429 (checked in check_hostile). Only 201, 402, 409, 429 or 503."""
        port = rng.choice(self.direct_ports)
        key = self._key(rng, HOSTILE_FLOOD_PREFIX)
        params = random_ride_params(rng)
        with self.lock:
            self.flood_keys[key] = params
        body = urllib.parse.urlencode(params)

        def request(wait):
            return ("POST /rides HTTP/1.1\r\nHost: rocket-rides\r\nAuthorization: Bearer %s\r\n"
                    "Idempotency-Key: %s\r\n%sContent-Type: application/x-www-form-urlencoded\r\n"
                    "Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (
                        self.token, key, "Prefer: wait=%d\r\n" % wait if wait else "", len(body), body)).encode()

        expected = {201, 402, 409, 429, 503}
        first = HostileRecord("waiter_flood", port, True, expected, strict=False, key=key, detail="first")
        threads = [threading.Thread(target=self._flood_one, args=(first, request(0)), daemon=True)]
        threads[0].start()
        # Soon enough that the key is mostly still in flight (a charge takes tens of milliseconds).
        self.abort.wait(0.03)
        waiters = [HostileRecord("waiter_flood", port, True, expected, strict=False, key=key, detail="waiter")
                   for _ in range(IDEMPOTENCY_MAX_WAITERS_PER_USER + 6)]
        for record in waiters:
            t = threading.Thread(target=self._flood_one, args=(record, request(2)), daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join(self.request_timeout + 10)
        with self.lock:
            self.waiter_bursts.append((first, waiters))

    def invalid(self, rng):
        """A request of a shape the API refuses (400, or 422 where docs/http-api.md says so), with a key
        of HOSTILE_PREFIX wherever it sends one: none of them may write a row."""
        auth, anonymous = self._auth(rng)
        key = self._key(rng)
        good = [("origin_lat", "1.5"), ("origin_lon", "2.5"), ("target_lat", "3.5"), ("target_lon", "4.5")]
        form = urllib.parse.urlencode(good)
        good_json = '"origin_lat":1.5,"origin_lon":2.5,"target_lat":3.5'
        cases = {
            # The key: blank, quoted blank, comma list (what a proxy makes of two), two headers,
            # too short, too long, not ASCII.
            "key_blank": ([("Idempotency-Key", "")], "form", form, 400),
            "key_spaces": ([("Idempotency-Key", "   ")], "form", form, 400),
            "key_quoted_blank": ([("Idempotency-Key", '"  "')], "form", form, 400),
            "key_quoted_empty": ([("Idempotency-Key", '""')], "form", form, 400),
            "key_comma_list": ([("Idempotency-Key", "%s, %s" % (key, self._key(rng)))], "form", form, 400),
            "key_two_headers": ([("Idempotency-Key", key), ("Idempotency-Key", self._key(rng))], "form", form, 400),
            "key_short": ([("Idempotency-Key", HOSTILE_PREFIX + "x")], "form", form, 400),
            "key_long": ([("Idempotency-Key", key + "x" * 256)], "form", form, 400),
            "key_not_ascii": ([("Idempotency-Key", key + "\u00e9")], "form", form, 400),
            # The body.
            "json_bad_utf8": ([("Idempotency-Key", key)], "json",
                              b'{' + good_json.encode() + b',"target_lon":"\xff\xfe"}', 400),
            "json_escaped_surrogate": ([("Idempotency-Key", key)], "json",
                                       '{%s,"target_lon":"\\ud800"}' % good_json, 400),
            "json_duplicate_key": ([("Idempotency-Key", key)], "json",
                                   '{%s,"target_lon":4.5,"target_lon":4.6}' % good_json, 400),
            "json_nested_duplicate": ([("Idempotency-Key", key)], "json",
                                      '{%s,"target_lon":4.5,"x":{"a":1,"a":2}}' % good_json, 400),
            "json_malformed": ([("Idempotency-Key", key)], "json", '{%s,"target_lon":4.5' % good_json, 400),
            "json_not_object": ([("Idempotency-Key", key)], "json", '[%s]' % good_json, 400),
            "form_repeated_field": ([("Idempotency-Key", key)], "form", form + "&origin_lat=1.6", 422),
            "form_exponent": ([("Idempotency-Key", key)], "form", form.replace("1.5", "1e1"), 422),
            "form_out_of_range": ([("Idempotency-Key", key)], "form", form.replace("1.5", "91"), 422),
            "form_missing": ([("Idempotency-Key", key)], "form", form.rpartition("&")[0], 422),
            # The query of GET /rides.
            "limit_repeated": (None, "/rides?limit=1&limit=2", None, 400),
            "limit_invalid": (None, "/rides?limit=%s" % rng.choice(["x", "-1", "1.5", "", "0x10"]), None, 400),
            "cursor_repeated": (None, "/rides?cursor=1&cursor=2", None, 400),
        }
        case = rng.choice(sorted(cases))
        headers, kind, body, status = cases[case]
        expected = {status} | self._unauthenticated(auth) if anonymous else {status}
        if headers is None:
            data = ("GET %s HTTP/1.1\r\nHost: rocket-rides\r\n%sConnection: close\r\n\r\n" % (kind, auth)).encode()
            sent_key = None
        else:
            if isinstance(body, str):
                body = body.encode()
            lines = "".join("%s: %s\r\n" % h for h in headers)
            content_type = "application/json" if kind == "json" else "application/x-www-form-urlencoded"
            data = ("POST /rides HTTP/1.1\r\nHost: rocket-rides\r\n%s%sContent-Type: %s\r\nContent-Length: %d\r\n"
                    "Connection: close\r\n\r\n" % (auth, lines, content_type, len(body))).encode("utf-8") + body
            sent_key = key
        port, direct = self._target(rng)
        self.exchange(HostileRecord("invalid", port, direct, expected, strict=False, key=sent_key, detail=case), data)
