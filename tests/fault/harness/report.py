"""The report of a run: the findings, the faults and coverage, and the one summary line (the RESULT
line of the HA profiles, the figures and result= of the others, CHECKER_OK or CHECKER_MISSED_...
with --plant-violations, SELF-TEST planted=... after an HA run's own verdict); and the exit code."""

import json
import sys
import time

from .base import log


class Report:
    """The Suite's verdict (a mixin: it reads the run's state on the Suite)."""

    def verdict(self, result, findings, statuses, stats, started, planted):
        """Logs the findings and prints the summary line; returns the exit code."""
        log("client statuses: %s" % ", ".join("%s=%d" % (s if s is not None else "no_answer", n)
                                              for s, n in sorted(statuses.items(), key=lambda x: str(x[0]))))
        log("provider stats: %s" % json.dumps(stats))
        log("faults: %s" % ", ".join("%s=%d" % kv for kv in sorted(self.faults.items())))
        for kind in self.available_kinds():
            if self.faults[kind] == 0:
                findings["coverage"].append("fault %s never injected" % kind)
        wanted_failovers = self.profile.get("failovers", 0) if self.servers.sentinel else 0
        if self.faults["redis_failover"] < wanted_failovers:
            findings["coverage"].append("%d Redis failovers of the %d the profile asks for" % (
                self.faults["redis_failover"], wanted_failovers))
        if self.ha:
            for text in self.ha_warnings:
                findings["cluster_unhealthy"].append(text)
            wanted = self.profile.get("min_failovers", 3)
            if result["failovers"] < wanted:
                findings["coverage"].append("%d leader changes observed, at least %d wanted" % (
                    result["failovers"], wanted))
        failed = bool(findings)
        for name, items in sorted(findings.items()):
            log("FINDING %s (%d):" % (name, len(items)))
            for item in items[:20]:
                log("  " + item)
        summary = " ".join("%s=%s" % kv for kv in result.items())
        if self.ha:
            code = self.ha_verdict(result, findings, summary, started, planted)
            return self.ha_self_test(code) if self.args.self_test else code
        if self.args.plant_violations:
            # The checker must see each planted break; anything else it reports is a real one.
            expected = {"duplicates": 1, "orphan_charges": 1, "lost_jobs": 1, "stuck_keys": 1,
                        "mismatched_answers": 1, "double_refunds": 1, "refund_violations": 2}
            if self.cluster:
                expected["restart_errors"] = 1
            expected.update(hostile_rows=1, hostile_5xx=1, hostile_second_answers=1, hostile_auth_unthrottled=1,
                            good_client_auth_throttled=1, wrong_origin_ip=1, hostile_waiters_unbounded=1)
            missed = [name for name, least in expected.items() if result[name] < least]
            verdict = "CHECKER_MISSED_%s" % ",".join(missed) if missed else "CHECKER_OK"
            print("%s seed=%d elapsed=%.0fs planted=%d result=%s" % (
                summary, self.seed, time.time() - started, len(expected), verdict))
            sys.stdout.flush()
            return 1 if missed else 0
        print("%s seed=%d elapsed=%.0fs result=%s" % (summary, self.seed, time.time() - started,
                                                       "FAIL" if failed else "PASS"))
        sys.stdout.flush()
        return 1 if failed else 0

    def ha_verdict(self, result, findings, summary, started, planted):
        """The HA profiles' one line: RESULT PASS or FAIL, then the figures that decide it."""
        failed = bool(findings)
        head = ["RESULT %s" % ("FAIL" if failed else "PASS"), "seed=%d" % self.seed]
        for name in ("failovers", "double_charges", "lost_acknowledged", "lost_jobs", "stuck_keys",
                     "max_unavailable_s", "p50_unavailable_s"):
            head.append("%s=%s" % (name, result[name]))
        rest = " ".join("%s=%s" % kv for kv in result.items() if kv[0] not in (
            "failovers", "double_charges", "lost_acknowledged", "lost_jobs", "stuck_keys", "max_unavailable_s",
            "p50_unavailable_s"))
        tail = ["replicas=%s" % ("async" if self.args.async_replicas else "sync"),
                "findings=%s" % (",".join(sorted(findings)) or "none")]
        if planted is not None:
            caught = []
            for name, needle in planted:
                caught.append("%s:%s" % (name, "caught" if any(needle in f for f in findings.get(name, [])) else "MISSED"))
            tail.append("planted=%s" % ",".join(caught))
            # The self-test fails by design: its logs are kept only if a plant went unseen.
            self.plants_caught = all(c.endswith(":caught") for c in caught)
        print("%s %s %s elapsed=%.0fs" % (" ".join(head), rest, " ".join(tail), time.time() - started))
        sys.stdout.flush()
        return 1 if failed else 0

    def ha_self_test(self, code):
        """--self-test: once the run has its own verdict, the plants of --plant-violations and a
        second check over the same records, which must name each; so one cluster serves both the
        run and the checker's self-test. Returns the run's code, or 1 if a plant went unseen."""
        planted = self.plant_ha_violations()
        _, findings, _, _ = self.check()
        caught = ["%s:%s" % (name, "caught" if any(needle in f for f in findings.get(name, [])) else "MISSED")
                  for name, needle in planted]
        print("SELF-TEST planted=%s" % ",".join(caught), flush=True)
        return 1 if any(c.endswith(":MISSED") for c in caught) else code
