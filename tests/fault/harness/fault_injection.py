"""The faults of the plain, Sentinel and cluster profiles: which kinds a run injects, how each is
injected (kill -9 of a daemon, PostgreSQL, Redis or PgBouncer down a while, the provider failing,
slow or dropping, a rolling restart), and when, while the traffic runs."""

import json
import time

from .base import CLUSTER, HarnessError, log, run
from .profiles import CLUSTER_FAULT_KINDS, FAULT_KINDS, HA_FAULT_KINDS


class Faults:
    """The Suite's fault injection (a mixin: the state it touches lives on the Suite)."""

    def available_kinds(self):
        if self.ha:
            if self.profile.get("plan"):
                return sorted(set(self.profile["plan"]))
            return list(HA_FAULT_KINDS) + list(self.profile.get("app_kinds", ()))
        kinds = list(FAULT_KINDS) + (list(CLUSTER_FAULT_KINDS) if self.cluster else [])
        if not self.enqueuers:
            kinds.remove("enqueuer_kill")
        if not self.completers:
            kinds.remove("completer_kill")
        if self.servers.sentinel:
            kinds[kinds.index("redis_restart")] = "redis_failover"
        return kinds

    def inject(self, kind):
        start = time.time()
        try:
            self._inject(kind)
        finally:
            if self.hostile is not None:
                self.hostile.provider_slow.clear()
            self.fault_windows.append((kind, start, time.time()))

    def _inject(self, kind):
        rng = self.rng
        self.faults[kind] += 1
        if kind in HA_FAULT_KINDS:
            self.inject_ha(kind)
        elif kind in ("api_kill", "api_kill_in_flight"):
            api = rng.choice(self.apis)
            if kind == "api_kill_in_flight":
                # Charges take most of STRIPE_TIMEOUT: many are in flight when the process dies,
                # and the provider records them after it is gone.
                self.mock_config(latency_ms=rng.randint(500, 900))
                self.provider_slow(True)
                time.sleep(rng.uniform(0.6, 1.5))
            else:
                time.sleep(rng.uniform(0.0, 1.0))
            log("fault: kill -9 %s (pid %d) with %d client requests in flight" % (
                api.name, api.proc.pid, self.traffic.in_flight))
            api.kill9()
            if kind == "api_kill_in_flight":
                time.sleep(rng.uniform(0.2, 1.0))
                self.mock_config(latency_ms=0)
                self.provider_slow(False)
            time.sleep(rng.uniform(0.3, 2.0))
            api.start()  # in the cluster: returns once HAProxy has it UP again
            self.wait_http(api.port, "/healthz", api)
        elif kind == "pgbouncer_restart":
            down = rng.uniform(0.5, 3.0)
            if rng.random() < 0.5:
                log("fault: kill -9 PgBouncer (pid %d), down %.1fs" % (self.pgbouncer.proc.pid, down))
                self.pgbouncer.kill9()
            else:
                log("fault: PgBouncer safe shutdown (SIGINT), down %.1fs" % down)
                self.pgbouncer.stop()
            time.sleep(down)
            self.pgbouncer.start()
        elif kind == "rolling_restart":
            self.rolling_restart()
        elif kind == "pg_restart":
            down = rng.uniform(1.0, 4.0)
            log("fault: PostgreSQL fast stop for %.1fs" % down)
            self.servers.pg_stop()
            time.sleep(down)
            self.servers.pg_start()
        elif kind == "redis_failover":
            self.servers.redis_failover(rng)
        elif kind == "redis_restart":
            down = rng.uniform(2.0, 5.0)
            log("fault: Redis stopped for %.1fs" % down)
            self.servers.redis_stop()
            time.sleep(down)
            self.servers.redis_start()
        elif kind in ("mock_fail", "mock_hang", "mock_drop"):
            length = rng.uniform(2.0, 5.0)
            if kind == "mock_fail":
                setting = dict(failure_rate=round(rng.uniform(0.3, 0.9), 2))
            elif kind == "mock_hang":
                setting = dict(latency_ms=rng.randint(1200, 2500))
            else:
                setting = dict(drop_rate=round(rng.uniform(0.3, 0.9), 2))
            log("fault: provider %s for %.1fs" % (json.dumps(setting), length))
            self.mock_config(**setting)
            self.provider_slow(kind == "mock_hang")
            time.sleep(length)
            self.mock_config(failure_rate=0, latency_ms=0, drop_rate=0)
            self.provider_slow(False)
        elif kind in ("enqueuer_kill", "completer_kill"):
            group = self.enqueuers if kind == "enqueuer_kill" else self.completers
            d = rng.choice(group)
            log("fault: kill -9 %s (pid %d)" % (d.name, d.proc.pid))
            d.kill9()
            time.sleep(rng.uniform(0.3, 2.0))
            d.start()
        else:
            raise AssertionError(kind)


    def provider_slow(self, slow):
        """Tells the hostile client the provider is slow now, so that it floods."""
        if self.hostile is not None:
            (self.hostile.provider_slow.set if slow else self.hostile.provider_slow.clear)()

    def rolling_restart(self):
        """scripts/cluster.sh rolling-restart under traffic, in a window no other fault touches:
        first the effects of the previous fault must have passed (no client error for 2 s)."""
        deadline = time.time() + 20 * self.slow
        while time.time() < deadline:
            with self.traffic.lock:
                last = max((e[1] for e in self.traffic.client_errors), default=0.0)
            if time.time() - last >= 2.0:
                break
            time.sleep(0.2)
        else:
            log("WARNING: clients still see errors from the previous fault; rolling restart anyway")
        log("fault: rolling restart of the APIs with %d client requests in flight" % self.traffic.in_flight)
        start = time.time()
        try:
            run([CLUSTER, "rolling-restart", self.cluster_dir], timeout=120 * self.slow)
        finally:
            end = time.time()
            self.rolling_windows.append((start, end))
        log("rolling restart took %.1fs" % (end - start))

    def run_faults(self, duration):
        start = time.time()
        end = start + duration
        kinds = self.available_kinds()
        # Every kind once, in a random order, spread over the run; then random ones at the rate.
        plan = list(kinds) + ["redis_failover"] * (self.profile.get("failovers", 1) - 1)
        self.rng.shuffle(plan)
        time.sleep(min(3.0, duration / 10))
        # The guaranteed ones come at least as often as the fault rate asks, and all of them
        # within the first 80% of the run.
        slot = max(1.0, min((duration * 0.8) / max(1, len(plan)), 60.0 / max(0.01, self.args.fault_rate)))
        # Each of them runs even when a loaded machine has made the earlier ones overrun the
        # duration: cutting the plan short turned a slow machine into a "never injected" finding
        # (each injection has its own bound, so the plan's length bounds the overrun).
        for kind in plan:
            slot_start = time.time()
            self.check_daemons()
            self.inject(kind)
            remaining = slot - (time.time() - slot_start)
            if time.time() < end:
                time.sleep(max(0.3, self.rng.uniform(0.3, max(0.3, remaining))))
            else:
                time.sleep(0.3)
        while True:
            gap = self.rng.expovariate(max(0.01, self.args.fault_rate) / 60.0)
            if time.time() + gap + 6 > end:
                break
            time.sleep(gap)
            self.check_daemons()
            self.inject(self.rng.choice(kinds))
        time.sleep(max(0.0, end - time.time()))

    def check_daemons(self):
        # A daemon that died by itself (not by our kill -9) is a finding; bring it back so the
        # run can go on, and say so.
        extra = [self.pgbouncer, self.haproxy] if self.cluster else []
        for d in self.apis + self.enqueuers + self.completers + [self.mock] + extra:
            if not d.alive():
                code = d.proc.returncode if d.proc else None
                self.unexpected_exits.append("%s exited with %s" % (d.name, code))
                log("WARNING: %s exited by itself with %s (see %s)" % (d.name, code, d.log_path))
                if d is self.mock:
                    raise HarnessError("the provider stand-in died; its state is lost")
                if d is self.haproxy:
                    raise HarnessError("HAProxy died (see %s)" % d.log_path)
                d.start()
                if d in self.apis:
                    self.wait_http(d.port, "/healthz", d)
