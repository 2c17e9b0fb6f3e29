"""The stand-in payment provider's /_mock/ admin endpoints (rrsuite's plain shape starts it): the
charges it made and the fault knobs."""

import http.client
import json

from rrsuite.process import HarnessError

STRIPE_KEY = "sk_test_browser_suite"


class StandInProvider:
    def __init__(self, process):
        self.process = process
        self.port = process.port

    @property
    def base_url(self):
        return "http://127.0.0.1:%d" % self.port

    def _call(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        if response.status != 200:
            raise HarnessError("%s %s answered %d: %s" % (method, path, response.status, data[:300]))
        return json.loads(data)

    def charges(self):
        """Every charge that moved money (declined ones are left out by the stand-in)."""
        return self._call("GET", "/_mock/charges")

    def stats(self):
        return self._call("GET", "/_mock/stats")

    def configure(self, **faults):
        """fail_next=N: the next N charges answer 500; latency_ms=M: every /v1/ call sleeps M ms."""
        return self._call("POST", "/_mock/config", faults)
