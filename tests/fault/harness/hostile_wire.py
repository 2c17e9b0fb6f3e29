"""What the hostile client and its checks share: the bounds and addresses the suite gives the
APIs, the key prefixes, a parser of raw HTTP/1.1 answers, and the record of one probe."""

import time


# Every probe of an invalid shape that carries an Idempotency-Key carries one that starts with
# this, so the checker can prove that none of them wrote a row (no key row may contain it).
HOSTILE_PREFIX = "hostile-invalid-"
# The hostile user's own valid keys (its flood of POST /rides).
HOSTILE_FLOOD_PREFIX = "hostile-flood-"
# The hostile client's own loopback address: the API must see it, not HAProxy's, as the client's
# (API_TRUSTED_PROXIES), so that its floods of unknown tokens are throttled for it alone
# (AUTH_FAILURES_PER_MINUTE) while the good clients, on 127.0.0.1, are never; origin_ip names it.
HOSTILE_ADDRESS = "127.0.0.66"
GOOD_ADDRESS = "127.0.0.1"
# The bounds the suite gives its APIs, low so that the hostile floods meet them within a burst.
AUTH_FAILURES_PER_MINUTE = 5
IDEMPOTENCY_MAX_WAITERS_PER_USER = 3
# The body of the API's 429 for an address past AUTH_FAILURES_PER_MINUTE (docs/http-api.md).
AUTH_THROTTLED = b"Too many failed authentications"
# The second request pipelined behind every smuggling shape: an answer to it on the same
# connection would mean the API read it as a request of its own.
PIPELINED = b"GET /healthz HTTP/1.1\r\nHost: rocket-rides\r\n\r\n"
# Methods for the long-method probe: token characters only (RFC 9110 tchar), so the request line
# itself is well formed.
TCHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~"


def parse_responses(data):
    """HTTP/1.1 responses one after another in data: ([(status, headers, body)], rest), where rest
    is what follows the last complete response (bytes that are no complete answer)."""
    out = []
    pos = 0
    while pos < len(data):
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            break
        lines = data[pos:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            break
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        start = end + 4
        if 100 <= status < 200 or status in (204, 304):
            body, pos = b"", start
        elif "content-length" in headers and headers["content-length"].isdigit():
            n = int(headers["content-length"])
            if start + n > len(data):
                break
            body, pos = data[start:start + n], start + n
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body, at = b"", start
            while True:
                line_end = data.find(b"\r\n", at)
                if line_end < 0:
                    return out, data[pos:]
                try:
                    size = int(data[at:line_end].split(b";")[0], 16)
                except ValueError:
                    return out, data[pos:]
                if size == 0:
                    trailer_end = data.find(b"\r\n\r\n", line_end)
                    if trailer_end < 0 and data[line_end:line_end + 4] != b"\r\n\r\n":
                        return out, data[pos:]
                    at = (trailer_end if trailer_end >= 0 else line_end) + 4
                    break
                body += data[line_end + 2:line_end + 2 + size]
                at = line_end + 2 + size + 2
            pos = at
        else:  # delimited by the close
            body, pos = data[start:], len(data)
        if 100 <= status < 200:
            continue  # an interim answer is no answer
        out.append((status, headers, body))
    return out, data[pos:]


def from_api(headers, body):
    """The API answers everything with a JSON body; HAProxy's own error pages are HTML."""
    return headers.get("server", "") == "rocket-rides" or (
        headers.get("content-type", "").startswith("application/json") and body.startswith(b"{"))


class HostileRecord:
    """One hostile probe (one connection, or one request of a flood) and what came back."""

    __slots__ = ("kind", "port", "direct", "sent", "ended", "expected", "strict", "answers", "rest", "closed",
                 "error", "key", "detail", "headers")

    def __init__(self, kind, port, direct, expected, strict, key=None, detail=""):
        self.kind = kind
        self.port = port
        self.direct = direct  # straight to an API (not through HAProxy)
        self.sent = time.time()
        self.ended = None
        self.expected = frozenset(expected)  # statuses docs/http-api.md promises for the first answer
        self.strict = strict  # must be the one answer on its connection, which then closes
        self.answers = []  # (status, from the API, body)
        self.rest = b""  # bytes after the last complete answer
        self.closed = None  # True: the server closed; False: still open at our deadline
        self.error = None  # connection error or timeout before a complete first answer
        self.key = key  # its Idempotency-Key, if it sent one
        self.detail = detail
        self.headers = {}  # the first answer's headers (names in lower case)
