"""A steady client of the API for the benches that time an outage (ha_bench: leader faults;
restore_drill: writes closed during a restore): a thread that books a ride with a new key every
`interval` seconds and records one line per request, "sent answered status" (epoch seconds; status
0 when nothing answered), so that the bench can find the spans without a 201 afterwards."""

import threading
import time
import urllib.error
import urllib.request
import uuid

RIDE = b"origin_lat=37.7749&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712"


class RideProbe:
    def __init__(self, api_url, token, path, interval, timeout):
        self.api_url, self.token, self.path = api_url, token, path
        self.interval, self.timeout = interval, timeout
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        with open(self.path, "a", buffering=1) as log:
            while not self.stopping.is_set():
                request = urllib.request.Request(self.api_url + "/rides", data=RIDE, method="POST", headers={
                    "Authorization": "Bearer " + self.token, "Idempotency-Key": str(uuid.uuid4()),
                    "Content-Type": "application/x-www-form-urlencoded"})
                sent = time.time()
                try:
                    with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                        status = answer.status
                except urllib.error.HTTPError as error:
                    status = error.code
                except Exception:
                    status = 0
                log.write("%.3f %.3f %d\n" % (sent, time.time(), status))
                self.stopping.wait(self.interval)

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=10)


def records(text):
    """(sent, answered, status) per line of a probe's file."""
    for line in text.splitlines():
        sent, answered, status = line.split()
        yield float(sent), float(answered), int(status)
