"""HAProxy running deploy/haproxy.cfg unchanged (and, in the HA shape, deploy/haproxy-postgres.cfg
in the same process): its command line and the environment that fills the files' addresses, and
its view of each server from the stats page's CSV, which is how a caller knows an API is in
rotation (UP) or out of it."""

import os
import time
import urllib.request

from .paths import REPO


def argv(postgres=False):
    files = ["-f", os.path.join(REPO, "deploy", "haproxy.cfg")]
    if postgres:
        files += ["-f", os.path.join(REPO, "deploy", "haproxy-postgres.cfg")]
    return ["/usr/sbin/haproxy", "-db"] + files


def env(port, stats_port, api_ports, source_address=None, postgres=None):
    """The addresses deploy/haproxy.cfg reads (source_address: the one it connects to the APIs
    from, if not its host's); postgres: (frontend port, [(address, pg port,
    REST port)] per node) for deploy/haproxy-postgres.cfg."""
    values = {"FRONTEND_ADDRESS": "127.0.0.1:%d" % port, "STATS_ADDRESS": "127.0.0.1:%d" % stats_port}
    if source_address:
        values["BACKEND_SOURCE_ADDRESS"] = source_address
    for i, api_port in enumerate(api_ports, 1):
        values["API%d_ADDRESS" % i] = "127.0.0.1:%d" % api_port
    if postgres:
        frontend, nodes = postgres
        values["POSTGRES_FRONTEND_ADDRESS"] = "127.0.0.1:%d" % frontend
        for n, (address, pg_port, rest_port) in enumerate(nodes, 1):
            values["PG%d_ADDRESS" % n] = "%s:%d" % (address, pg_port)
            values["PG%d_REST_PORT" % n] = str(rest_port)
    return values


# On the stats address: answers once HAProxy runs.
HEALTH_PATH = "/healthz"


def state(stats_port, server, section="apis"):
    """HAProxy's view of a server: UP, DOWN, "UP 1/2" (going down), "DOWN 1/2" (coming up),
    MAINT; "" when the stats page does not answer or does not list it."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/stats;csv" % stats_port, timeout=2) as response:
            text = response.read().decode(errors="replace")
    except (OSError, ValueError):
        return ""
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) > 17 and fields[0] == section and fields[1] == server:
            return fields[17]
    return ""


def wait_up(stats_port, server, seconds=20):
    """True once HAProxy reports the server UP, False after `seconds`."""
    for _ in range(int(seconds * 10)):
        if state(stats_port, server) == "UP":
            return True
        time.sleep(0.1)
    return False


def wait_out(stats_port, server, seconds=5):
    """After an API stopped: true once HAProxy no longer reports it UP (so that an UP seen later is
    about the new process)."""
    for _ in range(int(seconds * 10)):
        current = state(stats_port, server)
        if current != "UP" and not current.startswith("UP "):
            return True
        time.sleep(0.1)
    return False
