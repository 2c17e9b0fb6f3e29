"""The stand-in payment provider (rocket-rides-stripe-mock): started on a port, ready once its
/_mock/stats answers."""

import os

from .ports import free_port
from .process import Process


READY_PATH = "/_mock/stats"


def start(bin_dir, env, log_dir, port=None, seed=None, name="stripe-mock", timeout=30.0, wait=True, detached=False,
          header=None):
    """A running stand-in; env must hold the STRIPE_API_KEY it accepts. wait=False returns at once
    (the caller waits with wait_http(READY_PATH)); detached: see Process."""
    port = port or free_port()
    env = dict(env, PORT=str(port))
    if seed is not None:
        env["MOCK_SEED"] = str(seed)
    process = Process(name, [os.path.join(bin_dir, "rocket-rides-stripe-mock")], env, log_dir, port=port,
                      detached=detached, header=header).start()
    return process.wait_http(READY_PATH, timeout) if wait else process


def base_url(process):
    return "http://127.0.0.1:%d" % process.port
