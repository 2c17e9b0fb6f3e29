"""The suite's rocket-rides-api (started by rrsuite's plain shape) as the tests see it: its
origin, riders made with its own `user create` subcommand, and its access log read back to see
what the browser actually sent."""

import re
import time

_LOGFMT_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def parse_logfmt(line):
    fields = {}
    for key, value in _LOGFMT_FIELD.findall(line):
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        fields[key] = value
    return fields


class ApiServer:
    def __init__(self, plain):
        self.plain = plain
        self.process = plain.api
        self.port = plain.api.port

    @property
    def origin(self):
        return self.plain.origin

    def create_rider(self, email, customer):
        """A rider whose card the stand-in charges (or declines, when `customer` contains
        "declined"); returns the API token `user create` printed."""
        return self.plain.create_rider(email, customer)

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
