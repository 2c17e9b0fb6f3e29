"""The run: a Suite sets up its stack, drives the good and hostile clients while it injects faults,
waits for the system to quiesce, records the history, has the checker judge it and reports; and
stops everything it started, whatever happens."""

import collections
import os
import random
import shutil
import subprocess
import tempfile
import time

from . import checker
from .base import CLUSTER, HarnessError, log, run
from .fault_injection import Faults
from .ha_faults import HAFaults
from .hostile import Hostile
from .local_servers import Servers
from .patroni import HAServers
from .plants import Plants
from .profiles import PROFILES
from .recording import record_history
from .report import Report
from .stack import Stack
from .traffic import Traffic


class Suite(Stack, Faults, HAFaults, Plants, Report):
    """One run of a profile; its set-up, faults, plants and report are the mixins'."""

    def __init__(self, args):
        self.args = args
        self.profile = PROFILES[args.profile]
        self.seed = args.seed
        self.rng = random.Random("%s-faults" % self.seed)
        self.bin_dir = os.path.abspath(args.bin_dir)
        self.work_dir = tempfile.mkdtemp(prefix="rocket-rides-fault.")
        os.chmod(self.work_dir, 0o755)
        self.log_dir = os.path.join(self.work_dir, "logs")
        os.makedirs(self.log_dir)
        # The HA profiles run over scripts/cluster.sh too (HAProxy, PgBouncer, members started by
        # the script), with PostgreSQL under Patroni instead of one server.
        self.ha = self.profile.get("topology") == "ha"
        self.cluster = self.profile.get("topology") in ("cluster", "ha")
        self.monitor = None
        self.failover_events = []  # (kind, fault time, old leader, new leader or None, new leader seen)
        self.ha_warnings = []
        self.provider_key_secret = None
        if self.ha:
            self.cluster_dir = os.path.join(self.work_dir, "cluster")
            self.servers = HAServers(self.cluster_dir, 1.0)
        elif self.cluster:
            # scripts/cluster.sh's PostgreSQL is durable, whatever --fast says.
            self.cluster_dir = os.path.join(self.work_dir, "cluster")
            self.servers = Servers(self.cluster_dir, False, adopt=True)
        else:
            self.servers = Servers(self.work_dir, self.profile["fast"] if args.fast is None else args.fast,
                                   sentinel=self.profile.get("redis") == "sentinel")
        self.pgbouncer = None
        self.haproxy = None
        self.front_port = None
        self.rolling_windows = []  # (start, end) of each rolling restart
        self.apis = []
        self.enqueuers = []
        self.completers = []
        self.mock = None
        self.mock_port = None
        self.traffic = None
        self.hostile = None
        self.faults = collections.Counter()
        # (kind, start, end) of every fault injected, for the hostile client's checks.
        self.fault_windows = []
        self.slow = 1.0

    # -- quiescence and checks ------------------------------------------------------------------

    def quiesce(self, timeout):
        self.mock_config(failure_rate=0, latency_ms=0, drop_rate=0)
        if not self.servers.pg_up:
            self.servers.pg_start()
        if not self.servers.redis_up:
            self.servers.redis_start()
        self.check_daemons()
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                row = self.servers.psql(
                    "SELECT (SELECT count(*) FROM idempotency_keys WHERE recovery_point <> 'finished' "
                    "OR locked_at IS NOT NULL), (SELECT count(*) FROM staged_jobs)").strip()
                unfinished, staged = (int(x) for x in row.split("|"))
                last = (unfinished, staged)
                if unfinished == 0 and (staged == 0 or not self.enqueuers):
                    return True
            except (HarnessError, subprocess.TimeoutExpired, ValueError):
                pass
            time.sleep(0.5)
            self.check_daemons()
        log("quiesce timed out after %.0fs: unfinished keys=%s staged_jobs=%s" % (timeout, last and last[0],
                                                                                  last and last[1]))
        return False

    def check(self):
        """The checker's verdict on what the run recorded and the servers hold now."""
        return checker.check(record_history(self))

    def run(self):
        args = self.args
        self.unexpected_exits = []
        started = time.time()
        self.setup()
        log("setup took %.1fs; traffic for %ds with %d clients, fault rate %.1f/min" % (
            time.time() - started, args.duration, args.clients, args.fault_rate))
        request_timeout = 5.0 * self.slow
        # The cluster's clients know only HAProxy; the others pick an API themselves.
        ports = [self.front_port] if self.cluster else [d.port for d in self.apis]
        self.traffic = Traffic(ports, self.users, args.clients, self.seed,
                               self.profile["give_up"] * self.slow, request_timeout, keep_alive=self.cluster)
        self.traffic.start()
        # The hostile client goes where the good ones go; through HAProxy it also goes straight to
        # the APIs now and then, to see what the API itself does with each shape.
        self.hostile = Hostile(ports, [d.port for d in self.apis], self.hostile_user[2], self.seed, 2,
                               request_timeout, self.slow)
        self.hostile.start()
        self.traffic_window = [time.time(), None]
        if self.ha:
            self.run_ha_faults(args.duration)
        else:
            self.run_faults(args.duration)
        self.traffic_window[1] = time.time()
        self.traffic.stop_new.set()
        self.hostile.stop_new.set()
        log("faults stopped (%s); waiting for clients to reach an answer or give up" % dict(self.faults))
        # Clients stop at their give-up bound; the provider is healthy again from here on.
        self.mock_config(failure_rate=0, latency_ms=0, drop_rate=0)
        if not self.traffic.join(self.profile["give_up"] * self.slow + request_timeout + 30):
            log("WARNING: clients still running; aborting them")
            self.traffic.abort.set()
            self.traffic.join(request_timeout + 5)
        if not self.hostile.join(request_timeout * 3 + 30):
            log("WARNING: the hostile client still runs; aborting it")
            self.hostile.abort.set()
            self.hostile.join(request_timeout * 2 + 10)
        if self.traffic.errors:
            raise HarnessError("client thread failed:\n" + "\n".join(self.traffic.errors))
        if self.hostile.errors:
            raise HarnessError("hostile client thread failed:\n" + "\n".join(self.hostile.errors))
        log("traffic done after %.1fs; quiescing" % (time.time() - started))
        q_started = time.time()
        quiet = self.quiesce(self.profile["quiesce"] * self.slow)
        log("quiesced=%s in %.1fs" % (quiet, time.time() - q_started))
        if self.monitor is not None:
            self.monitor.stop()
        if self.ha:
            # The checker reads the final leader itself (and the provider's records), not the API.
            final = self.servers.pin()
            log("final leader %s; the checker reads its database" % final)
        planted = None
        if self.args.plant_violations:
            planted = self.plant_ha_violations() if self.ha else self.plant_violations()
        result, findings, statuses, stats = self.check()
        if self.ha and self.servers.leader() != self.servers.pinned:
            findings["harness"].append("the leader changed while the checker read %s" % self.servers.pinned)
        return self.verdict(result, findings, statuses, stats, started, planted)

    def cleanup(self, keep):
        if self.cluster:
            if getattr(self, "cluster_started", False):
                result = run([CLUSTER, "stop", self.cluster_dir], timeout=300, check=False)
                if result.returncode != 0:
                    log("stopping the cluster: %s" % result.stderr.decode(errors="replace")[-2000:])
            if keep:
                log("logs kept in %s" % os.path.join(self.cluster_dir, "logs"))
            else:
                shutil.rmtree(self.work_dir, ignore_errors=True)
            return
        for d in self.apis + self.enqueuers + self.completers + ([self.mock] if self.mock else []):
            try:
                d.stop(grace=5.0)
            except Exception:
                pass
        try:
            self.servers.stop()
        except Exception as e:
            log("stopping servers: %s" % e)
        if keep:
            log("logs kept in %s" % self.work_dir)
        else:
            shutil.rmtree(self.work_dir, ignore_errors=True)
