#!/usr/bin/env bash
# The fault-injection suite's ha-long profile: a soak (default 20 minutes, 32 clients) over the
# Patroni cluster (scripts/cluster.sh start --ha: three nodes, synchronous_mode_strict, etcd,
# HAProxy to the leader, PgBouncer, two of each daemon) with five rounds of leader faults (kill -9
# of the leader's postgres, kill -9 of its Patroni, a network partition of it), etcd kills, and
# the app faults of the other profiles at random between them. Prints the HA summary line
# (RESULT PASS|FAIL seed= failovers= double_charges= lost_acknowledged= lost_jobs= stuck_keys=
# max_unavailable_s= p50_unavailable_s= ...). Needs root (it makes network namespaces).
# Extra arguments go to the suite, e.g.
#   bench/ha_soak.sh --seed 1234 --duration 600 --fault-rate 2 --bin-dir build-fault/bin
#   bench/ha_soak.sh --async-replicas     (asynchronous replicas: what a failover then loses)
# Build first: scripts/build.sh build-fault -DCMAKE_BUILD_TYPE=RelWithDebInfo
set -euo pipefail
SOAK_PROFILE=ha-long exec "$(dirname "$0")/soak.sh" "$@"
