"""bench/ha_bench.sh: what the HA shape costs and how long a failover leaves clients without an
answer, measured side by side in one run on this machine:
  1. new keys per second through the production shape with ONE PostgreSQL (scripts/cluster.sh
     start) and with the Patroni cluster of three and synchronous replication
     (scripts/cluster.sh start --ha), the same wrk load (bench/api_bench/new_keys.lua) through
     HAProxy; verdict: HA / single >= 0.7;
  2. failover unavailability: under a steady trickle of new keys (one every 100 ms), the
     longest span without a 2xx answer from a fault of the leader (kill -9 of its postgres,
     kill -9 of its patroni, an operator's switchover) until the cluster is whole again;
     verdict: median <= 15 s.
Prints one row per measurement and the verdicts, figures and ratios only; a copy goes to
bench/results/ha_bench-DATE.md. The clusters start and stop through tools/rrsuite's cluster.py
(a guardian stops one if the bench is killed outright); needs root (Patroni runs as postgres).

  bench/ha_bench.sh [BIN_DIR]          (default build/bin; build first:
                                        scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo)
Environment: DURATION (seconds of wrk per shape, default 20), CONNECTIONS (default 32),
ROUNDS (alternating single / HA pairs, default 2), FAULTS (leader faults, default 6: kill-postgres,
kill-patroni and switchover in turn)."""

import contextlib
import os
import shutil
import tempfile
import statistics
import time
import uuid

from . import wrk
from .probe import RideProbe, records as probe_records
from .base import LUA_DIR, RESULTS, BenchError, cores, env_int, read, run_to_file, warn
from rrsuite import cluster
from rrsuite.paths import REPO

KINDS = ("kill-postgres", "kill-patroni", "switchover")


def say(text):
    warn("ha_bench: " + text)


def longest_gap(probe_log, at):
    """The longest span without a 2xx answer from `at` until now."""
    now = time.time()
    answers = sorted(answered for _, answered, status in probe_records(read(probe_log))
                     if 200 <= status < 300 and at < answered <= now)
    points = [at] + answers
    return max(b - a for a, b in zip(points, points[1:] + [now]))


def main(argv):
    os.chdir(REPO)
    bin_dir = os.path.abspath(argv[0] if argv else "build/bin")
    if not os.path.isdir(bin_dir):
        raise BenchError("no directory %s" % (argv[0] if argv else "build/bin"), 2)
    duration = env_int("DURATION", 20)
    connections = env_int("CONNECTIONS", 32)
    rounds = env_int("ROUNDS", 2)
    faults = env_int("FAULTS", 6)
    for tool in ("wrk", "patroni", "etcd", "haproxy", "pgbouncer"):
        if shutil.which(tool) is None:
            raise BenchError("%s is missing (scripts/install-deps.sh)" % tool)

    work = tempfile.mkdtemp(prefix="rocket-rides-ha-bench.", dir="/tmp")
    os.chmod(work, 0o755)  # PostgreSQL and Patroni run as the postgres user, under it
    os.makedirs(RESULTS, exist_ok=True)
    report = os.path.join(RESULTS, "ha_bench-%s.md" % time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    shown_report = os.path.relpath(report, REPO)
    state = {"current": None, "exports": {}}

    def row(text):
        line = "| %s |" % text
        print(line, flush=True)
        with open(report, "a") as f:
            f.write(line + "\n")

    def start_shape(name, *options):
        state["current"] = os.path.join(work, name)
        say("starting %s %s" % (name, " ".join(options)))
        state["exports"] = cluster.start(state["current"], bin_dir, dict(os.environ), options, timeout=900)

    def stop_shape():
        if state["current"]:
            cluster.stop(state["current"])
            state["current"] = None

    def script(*args, check=True, timeout=300):
        return cluster.script(*args, timeout=timeout, check=check).stdout.decode()

    def new_keys_rate():
        out = os.path.join(work, "wrk.out")
        env = dict(os.environ, BENCH_TOKEN=state["exports"]["ROCKET_RIDES_TOKEN"],
                   BENCH_RUN="ha-%s" % uuid.uuid4().hex[:10], BENCH_LUA_DIR=LUA_DIR)
        run_to_file(["wrk", "-t2", "-c%d" % connections, "-d%ds" % duration, "-s",
                     os.path.join(LUA_DIR, "new_keys.lua"), state["exports"]["API_URL"]], out, env=env)
        fields = wrk.bench_result(read(out))
        return "%.0f" % (int(fields.get("s2xx", 0)) / float(fields.get("seconds", duration)))

    def healthy():
        """A leader, a synchronous standby named, and both standbys streaming."""
        result = cluster.script("status", state["current"], check=False, timeout=120)
        if result.returncode != 0:
            return False
        status = result.stdout.decode(errors="replace")
        return ("\nleader: n" in "\n" + status and "role=sync_standby" in status
                and status.count("replication=streaming") >= 2)

    def wait_healthy():
        # `status` itself takes seconds (it asks every node), so the bound is a clock.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if healthy():
                return
            time.sleep(1)
        say("the cluster did not become healthy again within 180 s:")
        status = script("status", state["current"], check=False)
        warn("\n".join(line for line in status.splitlines() if line.startswith(("leader", "n1 ", "n2 ", "n3 "))))
        raise BenchError("", 1)

    def leader(check=True):
        result = cluster.script("leader", state["current"], check=False, timeout=120)
        if result.returncode != 0:
            if check:
                raise BenchError("no leader in %s" % state["current"])
            return None
        return result.stdout.decode().strip()

    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, work, True)
        stack.callback(stop_shape)
        # --- 1. throughput, single node against the HA cluster, alternating
        with open(report, "w") as f:
            f.write("# ha_bench %s on %d cores\n\n| measurement | figure |\n| --- | --- |\n" % (
                time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), cores()))
        single, ha = [], []
        for r in range(1, rounds + 1):
            start_shape("single-%d" % r)
            single.append(new_keys_rate())
            row("single PostgreSQL, new keys/s at %d, round %d | %s" % (connections, r, single[-1]))
            stop_shape()
            start_shape("ha-%d" % r, "--ha")
            ha.append(new_keys_rate())
            row("Patroni x3, synchronous, new keys/s at %d, round %d | %s" % (connections, r, ha[-1]))
            if r < rounds:
                stop_shape()

        # --- 2. failover unavailability on the last HA cluster
        probe_log = os.path.join(work, "probe.log")
        # A new key every 100 ms.
        probe = RideProbe(state["exports"]["API_URL"], state["exports"]["ROCKET_RIDES_TOKEN"], probe_log, 0.1, 3)
        stack.callback(probe.stop)
        unavailable = []
        wait_healthy()
        for i in range(faults):
            kind = KINDS[i % len(KINDS)]
            was = leader()
            time.sleep(2)
            # The clock starts when the fault has happened: right after a kill (the script spends
            # a moment finding the process first), before an operator's switchover (which returns
            # once it is over).
            if kind == "kill-postgres":
                script("kill-postgres", state["current"], was)
                at = time.time()
            elif kind == "kill-patroni":
                script("stop-member", state["current"], "patroni" + was[1:], "--kill")
                at = time.time()
            else:
                at = time.time()
                script("switchover", state["current"])
            # Unavailability: the longest span without a 2xx answer from the fault until the
            # cluster is whole again. Backends of a killed postmaster may still answer a request or
            # two before they notice, so "the first 2xx after the kill" would measure those
            # stragglers, not the outage.
            if kind == "kill-patroni":
                # Patroni comes back once its lock has moved (a new leader serving), as an operator would.
                for _ in range(300):
                    if leader(check=False) != was:
                        break
                    time.sleep(0.2)
                script("start-member", state["current"], "patroni" + was[1:])
            wait_healthy()
            time.sleep(3)
            seconds = "%.1f" % longest_gap(probe_log, at)
            unavailable.append(seconds)
            row("%s of leader %s -> %s: longest span without a 2xx, seconds | %s" % (
                kind, was, leader(check=False) or "none", seconds))
        probe.stop()

        s = [float(x) for x in single]
        h = [float(x) for x in ha]
        gaps = [float(x) for x in unavailable]
        ratio = statistics.median(h) / statistics.median(s)
        lines = ["", "| verdict | figure | target | |", "| --- | --- | --- | --- |",
                 "| HA / single new keys per second (medians %.0f / %.0f) | %.3f | >= 0.7 | %s |" % (
                     statistics.median(h), statistics.median(s), ratio, "PASS" if ratio >= 0.7 else "FAIL")]
        if gaps:
            median_gap = statistics.median(gaps)
            lines.append("| failover unavailability, median of %d (max %.1f) | %.1f s | <= 15 s | %s |" % (
                len(gaps), max(gaps), median_gap, "PASS" if median_gap <= 15 else "FAIL"))
        print("\n".join(lines), flush=True)
        with open(report, "a") as f:
            f.write("\n".join(lines) + "\n")
        say("report: " + shown_report)
    return 0
