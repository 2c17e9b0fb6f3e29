"""The fault suite's parts (tests/fault/fault_suite.py is its command line):

  cli.py              options, the replay line, signals, which run a profile gets
  profiles.py         the profiles and the kinds of fault each topology injects
  suite.py            the run: set up, traffic under faults, quiesce, check, report, clean up
  stack.py            the suite's set-up: the servers, the provider, the daemons, or scripts/cluster.sh's
                      cluster, all started through tools/rrsuite (processes, readiness, stopping)
  local_servers.py    PostgreSQL and Redis (plain or under Sentinel) and their faults
  patroni.py          the Patroni cluster: its leader, a monitor of leader changes
  netns.py            the network namespace the HA profiles run in
  fault_injection.py  the plain, Sentinel and cluster profiles' faults and their schedule
  ha_faults.py        the Patroni cluster's faults and their schedule
  traffic.py          the good clients
  hostile.py          the hostile client's probes
  hostile_wire.py     what the hostile client and its checks share (bounds, prefixes, raw HTTP)
  net.py              HTTP calls
  history.py          a recorded history: all the checker reads, as plain data
  recording.py        records a live run's history (database, Redis, provider, clients)
  checker.py          the exactly-once invariants on a history (checker_test.py tests it alone)
  checker_ha.py       the HA profiles' checks (double charges, lost acknowledged writes, unavailability)
  checker_hostile.py  the hostile client's checks
  plants.py           the checker's self-test: violations planted behind the product's back
  report.py           the findings, the summary line and the exit code
  restore_drill.py    the restore profiles: a point-in-time restore under traffic
  restore_checker.py  the restore drill's checker, on what the drill recorded
  base.py             paths, the log line, the harness's exceptions, running a command (from rrsuite)
"""

import os as _os
import sys as _sys

# Starting, waiting for and stopping the servers and daemons is the rrsuite package's (tools/rrsuite),
# shared with the other suites.
_tools = _os.path.abspath(_os.path.join(_os.path.dirname(__file__), "..", "..", "..", "tools"))
if _tools not in _sys.path:
    _sys.path.insert(0, _tools)
