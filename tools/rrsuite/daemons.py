"""The product's own binaries: rocket-rides-api (migrated, then serving, ready once /healthz
answers; its `user create` command), and the enqueuer, completer and reaper, which listen on
nothing and are ready once they have not exited at start."""

import os
import time

from .ports import free_port
from .process import HarnessError, Process, run


def binary(bin_dir, name, required=True):
    path = os.path.join(bin_dir, name)
    if not os.access(path, os.X_OK):
        if required:
            raise HarnessError("%s not found in %s (build it first)" % (name, bin_dir))
        return None
    return path


def is_sanitized(path):
    """Whether a binary was built with AddressSanitizer (it runs slower: timeouts grow)."""
    try:
        with open(path, "rb") as f:
            return b"AddressSanitizer" in f.read()
    except OSError:
        return False


def migrate(api, env, timeout=120):
    run([api, "migrate"], env=env, timeout=timeout)


def create_user(api, env, email, customer, timeout=60):
    """A rider made with `rocket-rides-api user create`; returns the API token it printed."""
    lines = run([api, "user", "create", "--email", email, "--stripe-customer", customer], env=env,
                timeout=timeout).stdout.decode().strip().splitlines()
    if not lines or not lines[-1].strip().startswith("rr_"):
        raise HarnessError("user create printed no token: %r" % lines[-3:])
    return lines[-1].strip()


API_READY_PATH = "/healthz"


def start_api(api, env, log_dir, name="api", port=None, timeout=30.0, wait=True, detached=False, header=None):
    """rocket-rides-api on `port` (a free one by default); waits for /healthz unless wait=False
    (to start several and then wait for each). detached: see Process."""
    port = port or free_port()
    process = Process(name, [api], dict(env, PORT=str(port)), log_dir, port=port, detached=detached,
                      header=header).start()
    return process.wait_http(API_READY_PATH, timeout) if wait else process


def start_worker(path, env, log_dir, name, detached=False, header=None):
    """An enqueuer, completer or reaper; see wait_started."""
    return Process(name, [path], env, log_dir, detached=detached, header=header).start()


def wait_started(processes, settle=0.5):
    """Workers listen on nothing: they count as started once they are still running `settle`
    seconds later (a bad setting or an unreachable database ends them at once)."""
    time.sleep(settle)
    for p in processes:
        if not p.alive():
            raise HarnessError("%s exited at start (exit %s; log: %s)" % (p.name, p.proc.returncode, p.log_path))
