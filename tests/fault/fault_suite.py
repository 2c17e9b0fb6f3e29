#!/usr/bin/env python3
"""Proof under fire: a fault-injection suite that checks exactly-once with numbers.

Starts real processes (PostgreSQL and Redis through scripts/local-servers.sh, the stand-in
provider, two APIs, two enqueuers, two completers), drives concurrent clients that retry their
own Idempotency-Key until a final answer, injects faults while the traffic runs (kill -9 of
APIs, enqueuers and completers; PostgreSQL fast stop/start; Redis stop/start; provider 5xx,
hangs past STRIPE_TIMEOUT and dropped connections after a charge), lets the system quiesce and
then checks the invariants independently (SQL, redis-cli, the provider's /_mock/charges):

  1. a key answered 201 has exactly one ride and exactly one provider charge; no request is
     charged twice; no charge exists without its ride;
  2. every key ends finished (201 or 402), none locked or unfinished;
  3. every finished 201 staged exactly one job and that job reached Redis (distinct jids);
  4. every client's final answer (status and body) equals the stored response of its key.

The cluster profiles (cluster-short, cluster-long) run the same traffic, faults and checks over
scripts/cluster.sh's production shape instead: clients go through HAProxy to two APIs, every
daemon reaches PostgreSQL through PgBouncer in transaction mode (DATABASE_PREPARED_STATEMENTS=off),
PostgreSQL is durable, and members are killed and started again through the cluster script (the
one place that knows how each is started; every other client keeps its connection to HAProxy
open, as an app on keep-alive does). Besides the faults above they restart PgBouncer
(safe shutdown or kill -9), kill -9 one API behind HAProxy and start it again, and do rolling
restarts of both APIs (scripts/cluster.sh rolling-restart: SIGTERM one, wait for it to exit,
start it, wait until HAProxy has it UP, then the other) while the clients keep sending. One more
invariant there:

  5. no client sees a connection error, a timeout or a 5xx during a rolling restart (every
     client error is recorded with its start and end; none may overlap a restart's window).
     Other faults may show clients errors, which they retry.

The HA profiles (ha-short, ha-long) run the same clients over scripts/cluster.sh start --ha:
PostgreSQL as three Patroni nodes (synchronous_mode_strict) over three etcd members, each node in
a network namespace of its own, HAProxy routing to the leader, PgBouncer through it, two of each
daemon. The whole run happens inside a network namespace the suite makes and deletes (root; see
run_in_netns). On a healthy cluster, one fault at a time, it kills the leader's postgres (kill -9),
kills the leader's Patroni (kill -9, started again once another node leads), cuts the leader off
the network (healed afterwards), kills an etcd member (started again), each followed by a wait for
a leader and a synchronous standby with the old leader back; and a few app faults of the other
profiles. The checker reads the provider's records and the final leader's own database (not the
API, not HAProxy), and adds:

  8. no client key is charged twice: every charge at the provider is attributed to a client key
     (its provider key in the final database, its id in a ride there or in a 201 a client saw, the
     derived provider key recomputed from the client's key and user id when the build derives them
     from PROVIDER_KEY_SECRET, or the key row its description names); a charge the final database
     does not know and no client saw acknowledged counts as a double charge too;
  9. nothing acknowledged is lost: every 201 a client saw has its ride, with that charge and under
     that client's key, on the final leader, and the charge at the provider; every 200 to a cancel
     has its ride cancelled with that refund.

They print one line, RESULT PASS or RESULT FAIL with seed=, failovers= (leader changes
observed), double_charges=, lost_acknowledged=, lost_jobs=, stuck_keys=, max_unavailable_s= (the
longest span in which no good client got a 2xx) and p50_unavailable_s= (the median over the
leader faults of the time from the fault to the first 2xx that wrote, sent after the fault and
answered once the new leader was seen), then the other figures. PASS needs every invariant and at
least three leader changes. --async-replicas runs the cluster with asynchronous replicas, for the
record of what a failover then loses.

Beside the good clients, in every profile, runs a hostile client (two threads, a user of its own,
or no valid token) that sends at random the probes of docs/http-api.md's "Hostile clients": methods of
200-4000 bytes on random paths, smuggling shapes (TE gzip, TE with Content-Length, TE in
HTTP/1.0, two Hosts, no Host, Expect: foo, Content-Encoding: gzip) with a request pipelined behind
them, a few dozen held and half-sent connections, drip-fed heads, a flood of POST /rides from its
own user (while the provider is slow, when a fault makes it so), invalid Idempotency-Keys, JSON
and GET /rides queries. Every probe of an invalid shape carries a key starting "hostile-invalid-".

  6. every answer the API gave the hostile client has the status docs/http-api.md gives, none a 5xx but 503;
     a smuggling shape sent straight to an API gets exactly one answer and a closed connection
     (through HAProxy, which frames requests itself, at most the pipelined /healthz's answer
     more); every probe is answered, except during faults that stop an API answering (kill -9,
     PostgreSQL or PgBouncer down, and for probes straight to an API a rolling restart), when
     connection errors and HAProxy's own 502/503/504 are not counted;
  7. nothing an invalid shape carried wrote a row: no key row holds "hostile-invalid-", and every
     key, ride and charge of the hostile user belongs to a valid key it sent; the answers to its
     valid keys equal what they store.

Prints one summary line and exits 0 only if every invariant holds (1 if one breaks, 2 if the
harness itself could not run). Every process and server it started is stopped on the way out,
whatever happens (try/finally, SIGINT/SIGTERM handlers, PR_SET_PDEATHSIG on the children and a
guardian that stops the servers if this process is killed outright).

Python 3 standard library only. Usage:

  tests/fault/fault_suite.py --profile short --bin-dir build/bin
  tests/fault/fault_suite.py --profile long --duration 1200 --clients 32 --seed 1234
  tests/fault/fault_suite.py --profile cluster-short --bin-dir build/bin
  tests/fault/fault_suite.py --profile ha-short --bin-dir build/bin          (root)
"""

import os
import sys

# The suite's parts live in the harness package beside this script (harness/__init__.py lists them).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness.cli import main  # noqa: E402  (importable only once the path above is in place)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
