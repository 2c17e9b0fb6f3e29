"""Free loopback ports for the servers the suites start."""

import random
import socket

from .process import HarnessError

_taken = set()


def free_port():
    """A free port on 127.0.0.1 below the kernel's ephemeral range, so that no outgoing connection
    takes it between this check and the server's bind (nor while a killed server is down before
    it binds it again); never the same one twice in a run."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(10000, max(10001, low))
        if port in _taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _taken.add(port)
        return port
    raise HarnessError("no free loopback port below %d" % low)
