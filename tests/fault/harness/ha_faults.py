"""The Patroni cluster's faults (kill -9 of the leader's postgres or Patroni, a partition of the
leader, the standbys lost, an etcd member killed), each on a healthy cluster and followed by a wait
for it to be whole again; and the plan that spreads them over an HA run."""

import os
import re
import signal
import subprocess
import time

from rrsuite import node_postgres

from .base import CLUSTER, HarnessError, log, run
from .profiles import HA_LEADER_FAULT_KINDS

# Lines of a node's Patroni log that say why it does not stream: Patroni's rewind decision (its
# local and the leader's timeline and position), PostgreSQL's recovery on timelines and WAL, what
# it restored from the archive and what the node's restore command refused.
LAGGING_NODE_EVIDENCE = re.compile(
    r"timeline|rewind|diverg|forked|waiting for WAL|streaming|replication slot|restored log file|not fetching"
    r"|FATAL|ERROR|reinitializ")


class HAFaults:
    """The Suite's HA fault injection (a mixin: the state it touches lives on the Suite)."""

    def cluster_script(self, *args, timeout=120):
        result = run([CLUSTER] + list(args), timeout=timeout * self.slow, check=False)
        if result.returncode != 0:
            raise HarnessError("scripts/cluster.sh %s failed (exit %d): %s" % (
                " ".join(args), result.returncode, result.stderr.decode(errors="replace")[-2000:]))
        return result.stdout.decode()

    def cluster_script_on_nodes(self, command, nodes, timeout=120):
        """scripts/cluster.sh COMMAND DIR NODE for every node at once (a process each), so that
        they take effect together rather than each a command's start-up after the one before."""
        processes = [(node, subprocess.Popen([CLUSTER, command, self.cluster_dir, node], stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
                     for node in nodes]
        failures = []
        for node, process in processes:
            try:
                _, err = process.communicate(timeout=timeout * self.slow)
            except subprocess.TimeoutExpired:
                process.kill()
                _, err = process.communicate()
            if process.returncode != 0:
                failures.append("%s %s (exit %s): %s" % (command, node, process.returncode,
                                                         err.decode(errors="replace")[-1000:]))
        if failures:
            raise HarnessError("scripts/cluster.sh " + "; ".join(failures))

    def ha_healthy(self):
        """(leader, view) if the cluster is whole again: one leader, running, that scripts/cluster.sh
        names too, every other node streaming from it (the leader's pg_stat_replication), and
        (not with --async-replicas) Patroni's synchronous standby among them, streaming
        synchronously; else (None, view). Patroni's own view says "running" for a standby that is
        not streaming yet, and a fault of the next leader while one is still being rebuilt would
        find no standby to promote."""
        view = self.servers.members()
        leaders = [n for n, (role, state) in view.items() if role == "leader" and state == "running"]
        if len(leaders) != 1 or self.servers.leader() != leaders[0]:
            return None, view
        leader = leaders[0]
        try:
            rows = self.servers.psql_node(leader, "SELECT application_name, state, sync_state FROM pg_stat_replication",
                                          timeout=10)
        except (HarnessError, subprocess.TimeoutExpired):
            return None, view
        streaming = {}
        for line in rows.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1] == "streaming":
                streaming[parts[0]] = parts[2]
        replication = dict(view, replication=streaming)
        others = set(self.servers.nodes) - {leader}
        if not others <= set(streaming):
            return None, replication
        # The synchronous standby as Patroni designates it (its /sync key: the only node it will
        # promote), streaming synchronously. PostgreSQL alone is not enough: while the leader has
        # none designated (a standby just restarted), synchronous_standby_names is '*' and
        # pg_stat_replication calls the first standby "sync", yet Patroni has no candidate and a
        # leader fault then finds no failover ("members list is empty").
        if not self.args.async_replicas and not any(
                view.get(n, (None, None))[0] == "sync_standby" and streaming.get(n) == "sync" for n in others):
            return None, replication
        return leader, replication

    def wait_ha_healthy(self, timeout=120):
        """Until the cluster is whole again (see ha_healthy); a warning, and a finding, if not
        within the bound. Returns the leader (or None)."""
        deadline = time.time() + timeout * self.slow
        started = time.time()
        view = {}
        while time.time() < deadline:
            leader, view = self.ha_healthy()
            if leader is not None:
                if time.time() - started > 1.0:
                    log("cluster healthy after %.1fs: %s" % (time.time() - started, view))
                return leader
            time.sleep(0.5)
        text = "cluster not whole %.0fs after a fault (a leader, every other node streaming from it, one "\
               "synchronously): %s" % (timeout * self.slow, view)
        log("WARNING: " + text)
        self.log_lagging_nodes(view)
        self.ha_warnings.append(text)
        return self.servers.leader()

    def log_lagging_nodes(self, view):
        """What each node that is not streaming from the leader last said about timelines, rewinds
        and WAL (its Patroni log, which holds its PostgreSQL's too): what CI reports back is the
        suite's output alone, so a finding has to carry its own evidence."""
        streaming = view.get("replication", {})
        for node in sorted(self.servers.nodes):
            if view.get(node, (None, None))[0] == "leader" or node in streaming:
                continue
            path = os.path.join(self.cluster_dir, "logs", "patroni%s.log" % node[1:])
            try:
                with open(path, errors="replace") as f:
                    lines = [line.rstrip() for line in f if LAGGING_NODE_EVIDENCE.search(line)]
            except OSError as e:
                log("  %s: no log to show (%s)" % (node, e))
                continue
            log("  %s, last of its log on timelines, rewinds and WAL (%s):" % (node, path))
            for line in lines[-12:]:
                log("    " + line[:300])

    def wait_leader_change(self, old, since, timeout=60, or_recovered=False):
        """Until a node other than `old` leads; (that node, the time it was first seen), or
        (None, None). or_recovered: also stop, without a finding, once the cluster is whole again
        under `old`."""
        deadline = time.time() + timeout * self.slow
        while time.time() < deadline:
            leader = self.servers.leader()
            if or_recovered and leader == old and time.time() - since > 5.0 and self.ha_healthy()[0] == old:
                log("no failover: %s recovered in place and leads a whole cluster again after %.1fs" % (
                    old, time.time() - since))
                return None, None
            if leader is not None and leader != old:
                self.monitor.note(leader)
                seen = next((t for t, _, new in self.monitor.changes() if t >= since and new != old), time.time())
                log("failover: %s leads %.1fs after the fault (was %s)" % (leader, seen - since, old))
                return leader, seen
            time.sleep(0.2)
        text = "no other node led within %.0fs of a fault of leader %s" % (timeout * self.slow, old)
        log("WARNING: " + text)
        self.ha_warnings.append(text)
        return None, None

    def inject_ha(self, kind):
        rng = self.rng
        old = self.wait_ha_healthy()
        if old is None:
            raise HarnessError("no leader to inject %s into" % kind)
        index = old[1:]
        if kind == "ha_etcd_kill":
            member = "etcd%d" % rng.randint(1, 3)
            down = rng.uniform(2.0, 6.0)
            log("fault: kill -9 %s for %.1fs (leader %s)" % (member, down, old))
            self.cluster_script("stop-member", self.cluster_dir, member, "--kill")
            time.sleep(down)
            self.cluster_script("start-member", self.cluster_dir, member)
            self.wait_ha_healthy()
            return
        start = time.time()
        if kind == "ha_kill_postgres":
            log("fault: kill -9 of the leader's postgres (%s) with %d client requests in flight" % (
                old, self.traffic.in_flight))
            self.cluster_script("kill-postgres", self.cluster_dir, old)
            new, seen = self.wait_leader_change(old, start)
        elif kind == "ha_kill_patroni":
            log("fault: kill -9 of the leader's Patroni (patroni%s on %s) with %d client requests in flight" % (
                index, old, self.traffic.in_flight))
            self.cluster_script("stop-member", self.cluster_dir, "patroni" + index, "--kill")
            new, seen = self.wait_leader_change(old, start)
            time.sleep(rng.uniform(0.5, 3.0))
            log("starting patroni%s again" % index)
            self.cluster_script("start-member", self.cluster_dir, "patroni" + index, timeout=180)
        elif kind == "ha_standbys_lost":
            standbys = sorted(n for n in self.servers.nodes if n != old)
            cut = rng.uniform(2.0, 4.0)
            log("fault: standbys %s cut off for %.1fs, then kill -9 of the leader's postgres (%s), with %d client "
                "requests in flight" % (" and ".join(standbys), cut, old, self.traffic.in_flight))
            # The postmaster found before the cut, so that the kill lands the moment the cut ends
            # rather than a command's start-up later (seconds when the machine is busy).
            postmaster = node_postgres.postmaster_pid(self.servers.settings(), int(index))
            if postmaster is None:
                raise HarnessError("no postgres running on the leader %s" % old)
            try:
                self.cluster_script_on_nodes("partition", standbys)
                time.sleep(cut)
                try:
                    os.kill(postmaster, signal.SIGKILL)
                except ProcessLookupError:
                    # Cut off from etcd's majority with its standbys, the leader demotes itself
                    # offline once etcd has not answered for retry_timeout (4 s), which a cut of
                    # 2-4 s can reach: its PostgreSQL is already stopped, and the fault goes on as
                    # the in-place recovery below (docs/high-availability.md).
                    log("the leader's postgres (pid %d) had already stopped: %s demoted itself, cut off "
                        "from etcd's majority" % (postmaster, old))
            finally:
                self.cluster_script_on_nodes("heal", standbys)
            # Patroni decides at the leader's next loop: if no standby is a candidate yet (their
            # replication and etcd members are only coming back), the old leader recovers its
            # PostgreSQL in place and keeps the lock. Safe (nothing it acknowledged was lost), so
            # not a finding; it is no failover either. Whole again means crash recovery and both
            # standbys back: the bound is the one for a cluster whole after any fault (120 s), not
            # a failover's 60 s, which it came within 14 s of beside the browser suite (46.7 s).
            new, seen = self.wait_leader_change(old, start, timeout=120, or_recovered=True)
        elif kind == "ha_partition":
            log("fault: network partition of the leader %s with %d client requests in flight" % (
                old, self.traffic.in_flight))
            self.cluster_script("partition", self.cluster_dir, old)
            try:
                new, seen = self.wait_leader_change(old, start)
                time.sleep(rng.uniform(1.0, 4.0))
            finally:
                log("healing %s" % old)
                self.cluster_script("heal", self.cluster_dir, old)
        else:
            raise AssertionError(kind)
        self.failover_events.append((kind, start, old, new, seen))
        self.wait_ha_healthy()

    def run_ha_faults(self, duration):
        """The HA profiles' faults, one at a time on a healthy cluster: every leader fault
        `leader_faults` times and an etcd kill (one per two rounds), and the profile's other kinds
        once each, in a random order; then random ones of all kinds at the fault rate until the
        duration is up. The traffic runs at least `duration` and until the last fault's cluster is
        healthy again, plus a few seconds to see clients served."""
        start = time.time()
        end = start + duration
        rounds = self.profile.get("leader_faults", 1)
        plan = list(self.profile.get("plan") or HA_LEADER_FAULT_KINDS * rounds + ["ha_etcd_kill"] * max(
            1, rounds // 2) + list(self.profile.get("app_kinds", ())))
        self.rng.shuffle(plan)
        time.sleep(min(5.0, duration / 10))
        slot = max(1.0, (duration * 0.8) / max(1, len(plan)))
        for kind in plan:
            slot_start = time.time()
            self.check_daemons()
            self.inject(kind)
            remaining = slot - (time.time() - slot_start)
            time.sleep(max(1.0, self.rng.uniform(1.0, max(1.0, remaining))))
        kinds = self.available_kinds()
        while self.args.fault_rate > 0:
            gap = self.rng.expovariate(self.args.fault_rate / 60.0)
            if time.time() + gap + 30 > end:
                break
            time.sleep(gap)
            self.check_daemons()
            self.inject(self.rng.choice(kinds))
        self.wait_ha_healthy()
        time.sleep(max(5.0, end - time.time()))
