#!/usr/bin/env bash
# The fault-injection suite's ha-long profile: a soak over the Patroni cluster (scripts/cluster.sh
# start --ha) with five rounds of leader faults, etcd kills and the other profiles' app faults.
# Prints the HA summary line (RESULT PASS|FAIL seed= failovers= double_charges= lost_acknowledged=
# lost_jobs= stuck_keys= max_unavailable_s= p50_unavailable_s= ...). Needs root (it makes network
# namespaces). Extra arguments go to the suite, e.g.
#   bench/ha_soak.sh --seed 1234 --duration 600 --fault-rate 2 --bin-dir build-fault/bin
#   bench/ha_soak.sh --async-replicas     (asynchronous replicas: what a failover then loses)
# Usage and defaults: bench/rrbench/soak.py.
SOAK_PROFILE=ha-long exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" soak "$@"
