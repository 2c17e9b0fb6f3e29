#!/usr/bin/env bash
# The fault-injection suite's cluster-long profile: a soak over scripts/cluster.sh's production
# shape (HAProxy, two APIs, PgBouncer), with PgBouncer restarts, kill -9 of an API behind HAProxy
# and rolling restarts besides the usual faults. Extra arguments go to the suite, e.g.
#   bench/cluster_soak.sh --seed 1234 --duration 600 --fault-rate 10 --bin-dir build-fault/bin
# Usage and defaults: bench/rrbench/soak.py.
SOAK_PROFILE=cluster-long exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" soak "$@"
