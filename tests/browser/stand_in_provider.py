"""The stand-in payment provider (rocket-rides-stripe-mock) on a port of its own, and its /_mock/
admin endpoints: the charges it made and the fault knobs."""

import http.client
import json

from processes import ChildProcess, HarnessError, free_port

STRIPE_KEY = "sk_test_browser_suite"


class StandInProvider:
    def __init__(self, bin_dir, base_env, log_dir):
        self.port = free_port()
        env = dict(base_env, PORT=str(self.port), STRIPE_API_KEY=STRIPE_KEY)
        self.process = ChildProcess("stripe-mock", [bin_dir + "/rocket-rides-stripe-mock"], env, log_dir).start()
        self.process.wait_http(self.port, "/_mock/stats")

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

    def stop(self):
        return self.process.stop()
