#!/usr/bin/env python3
"""The HA fault injection's evidence for a cluster that is not whole again (HAFaults.log_lagging_nodes),
on a logs directory written here (no server, no process): a node that does not stream gets the last
of its log on timelines, rewinds and WAL, routine lines left out; the leader and a streaming standby
get nothing; a node whose log is missing is named with why.

Usage: tests/fault/ha_evidence_test.py [-v]   (exit 0 when every case passes)
"""

import contextlib
import io
import os
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness.ha_faults import HAFaults  # noqa: E402  (importable only once the path above is in place)

STUCK_STANDBY_LOG = """\
2026-12-07 05:07:05,120 INFO: no action. I am (n3), a secondary, and following a leader (n2)
2026-12-07 05:07:05,300 INFO: Local timeline=1 lsn=0/10000000
2026-12-07 05:07:05,310 INFO: primary_timeline=2
2026-12-07 05:07:06.668 UTC [10134] LOG:  restored log file "000000010000000000000010" from archive
2026-12-07 05:07:07.447 UTC [11576] FATAL:  could not start WAL streaming: ERROR:  requested starting point 0/17000000 \
on timeline 1 is not in this server's history
2026-12-07 05:07:07.681 UTC [10134] LOG:  new timeline 2 forked off current database system timeline 1 before current \
recovery point 0/17000000
2026-12-07 05:07:09,120 INFO: no action. I am (n3), a secondary, and following a leader (n2)
"""


def cluster_view(leader, sync_standby, streaming):
    """ha_healthy's view of n1..n3: Patroni's role and state of each node, and the leader's
    pg_stat_replication (node: sync_state) under "replication"."""
    view = {node: ("replica", "running") for node in ("n1", "n2", "n3")}
    view[leader] = ("leader", "running")
    view[sync_standby] = ("sync_standby", "running")
    view["replication"] = streaming
    return view


def lagging_nodes_output(cluster_dir, view):
    faults = HAFaults()
    faults.cluster_dir = cluster_dir
    faults.servers = types.SimpleNamespace(nodes=["n1", "n2", "n3"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        faults.log_lagging_nodes(view)
    return out.getvalue()


class LaggingNodesTest(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.TemporaryDirectory()
        self.cluster_dir = self.work.name
        os.mkdir(os.path.join(self.cluster_dir, "logs"))
        for index, text in (("1", "2026-12-07 05:07:05,000 INFO: no action. I am (n1), the leader\n"),
                            ("3", STUCK_STANDBY_LOG)):
            with open(os.path.join(self.cluster_dir, "logs", "patroni%s.log" % index), "w") as f:
                f.write(text)

    def tearDown(self):
        self.work.cleanup()

    def test_the_standby_that_does_not_stream_shows_why(self):
        # n2 streams but has no log here: were it looked at, it would be named as missing.
        output = lagging_nodes_output(self.cluster_dir, cluster_view("n1", "n2", {"n2": "sync"}))
        self.assertIn("n3, last of its log on timelines, rewinds and WAL", output)
        self.assertIn("Local timeline=1 lsn=0/10000000", output)
        self.assertIn("forked off current database system timeline 1 before current", output)
        self.assertIn('restored log file "000000010000000000000010"', output)
        self.assertNotIn("no action", output)
        self.assertNotIn("patroni1.log", output)
        self.assertNotIn("patroni2.log", output)

    def test_a_missing_log_is_named(self):
        output = lagging_nodes_output(self.cluster_dir, cluster_view("n1", "n3", {"n3": "sync"}))
        self.assertIn("n2: no log to show", output)
        self.assertIn("patroni2.log", output)
        self.assertNotIn("patroni3.log", output)

    def test_a_whole_cluster_shows_nothing(self):
        view = cluster_view("n1", "n2", {"n2": "sync", "n3": "async"})
        self.assertEqual(lagging_nodes_output(self.cluster_dir, view), "")

if __name__ == "__main__":
    unittest.main()
