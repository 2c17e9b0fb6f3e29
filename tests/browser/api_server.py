"""rocket-rides-api from the build directory on a free loopback port, over the suite's own database
and the stand-in provider; riders created with its own `user create` subcommand; its access log
read back to see what the browser actually sent."""

import re
import time

from processes import ChildProcess, HarnessError, free_port, run
from stand_in_provider import STRIPE_KEY

_LOGFMT_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def parse_logfmt(line):
    fields = {}
    for key, value in _LOGFMT_FIELD.findall(line):
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        fields[key] = value
    return fields


class ApiServer:
    def __init__(self, bin_dir, base_env, database, provider, log_dir):
        self.binary = bin_dir + "/rocket-rides-api"
        self.port = free_port()
        self.env = dict(base_env, DATABASE_URL=database.url, STRIPE_API_BASE=provider.base_url,
                        STRIPE_API_KEY=STRIPE_KEY, STRIPE_TIMEOUT="5", SHUTDOWN_TIMEOUT="5", SHUTDOWN_DRAIN="0")
        run([self.binary, "migrate"], self.env)
        self.process = ChildProcess("api", [self.binary], dict(self.env, PORT=str(self.port)), log_dir).start()
        self.process.wait_http(self.port, "/healthz")

    @property
    def origin(self):
        return "http://127.0.0.1:%d" % self.port

    def create_rider(self, email, customer):
        """A rider whose card the stand-in charges (or declines, when `customer` contains
        "declined"); returns the API token `user create` printed."""
        lines = run([self.binary, "user", "create", "--email", email, "--stripe-customer", customer],
                    self.env).strip().splitlines()
        if not lines or not lines[-1].startswith("rr_"):
            raise HarnessError("user create printed no token: %r" % lines)
        return lines[-1].strip()

    def log_offset(self):
        return self.process.log_size()

    def requests_since(self, offset, method, path_prefix, expected=0, timeout=3.0):
        """The access-log lines (as dicts) of requests `method path_prefix...` logged after
        `offset`; waits up to `timeout` for at least `expected` of them (the log is written in
        batches, up to 50 ms late)."""
        deadline = time.monotonic() + timeout
        while True:
            found = []
            for line in self.process.log_text(offset).splitlines():
                fields = parse_logfmt(line)
                if fields.get("msg") == "request" and fields.get("method") == method and \
                        fields.get("path", "").startswith(path_prefix):
                    found.append(fields)
            if len(found) >= expected or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def stop(self):
        return self.process.stop()
