"""Allocations and system calls per request (the standards' budget: round trips, context switches
and allocations, counted and printed). Outside the timed runs, on an API started for this alone
with librocket-rides-alloc-counter.so preloaded (its counter read from a shared file before and
after each load) and its system calls counted by perf (raw_syscalls:sys_enter, all its threads)
over the same load: new keys at 32, then replays of the replay key at 32. Without the library (a
sanitized build) or perf, the figures read "-"."""

import os
import shutil
import signal
import struct
import subprocess
import time

from . import wrk
from .base import say
from .measure import LUA_REL


def _counter(path):
    with open(path, "rb") as f:
        data = f.read(8)
    return struct.unpack("=Q", data)[0] if len(data) == 8 else None


def count_allocations(b):
    library = os.path.join(b.bin, "librocket-rides-alloc-counter.so")
    have_perf = shutil.which("perf") is not None and subprocess.run(
        ["perf", "stat", "-e", "raw_syscalls:sys_enter", "--", "true"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0
    if not os.path.isfile(library):
        return
    say("\ncounting allocations and system calls per request (an API of its own, preloaded)...")
    counter_file = b.file("alloc-count")
    open(counter_file, "w").close()
    api = b.start_api("api-count", ALLOC_COUNTER_FILE=counter_file, LD_PRELOAD=library)
    b.apis.remove(api)  # not one of the measured runs' APIs
    url = "http://127.0.0.1:%d" % api.port

    def load(lua, seconds, run):
        env = dict(os.environ, BENCH_TOKEN=b.token, BENCH_RUN=run, BENCH_REPLAY_KEY=b.replay_key or "")
        return subprocess.run(["wrk", "-t2", "-c32", "-d%ds" % seconds, "-s", "%s/%s" % (LUA_REL, lua), url], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout.decode(errors="replace")

    def costs(lua):
        """(allocations, system calls) per answered request, "-" for what could not be counted."""
        a0 = _counter(counter_file)
        if a0 is None:
            return "-", "-"  # the library mapped nothing
        perf = None
        csv = b.file("count-syscalls.csv")
        if have_perf:
            perf = subprocess.Popen(["perf", "stat", "-e", "raw_syscalls:sys_enter", "-x,", "-o", csv, "-p",
                                     str(api.proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)  # perf attaches to every thread before the load starts
        try:
            out = load(lua, 5, "count-%s" % os.urandom(4).hex())
        finally:
            if perf is not None:
                perf.send_signal(signal.SIGINT)
                perf.wait()
        a1 = _counter(counter_file)
        n = int(wrk.bench_result(out).get("s2xx", 0) or 0)
        allocations = "%.0f" % ((a1 - a0) / n) if n > 0 else ""
        syscalls = "-"
        if have_perf and os.path.exists(csv) and os.path.getsize(csv) > 0:
            for line in open(csv):
                if "raw_syscalls:sys_enter" in line:
                    value = line.split(",")[0]
                    if value.isdigit() and n > 0:
                        syscalls = "%.1f" % (int(value) / n)
        return allocations, syscalls

    # Warm: pooled connections, prepared statements, the token, the provider's connections.
    load("new_keys.lua", 2, "count-warmup-%s" % os.urandom(4).hex())
    new_key, replay = costs("new_keys.lua"), costs("replay.lua")
    b.figures["allocs_new_key"], b.figures["syscalls_new_key"] = new_key
    b.figures["allocs_replay"], b.figures["syscalls_replay"] = replay
    say("  new key: %s allocations, %s system calls; replay from memory: %s allocations, %s system calls" % (
        new_key[0] or "-", new_key[1] or "-", replay[0] or "-", replay[1] or "-"))
    api.stop()
