#!/usr/bin/env bash
# The fault-injection suite's cluster-long profile: a soak (default 20 minutes, 32 clients) over
# scripts/cluster.sh's production shape (HAProxy in front of two APIs, PgBouncer in transaction
# mode, durable PostgreSQL), with PgBouncer restarts, kill -9 of an API behind HAProxy and
# rolling restarts besides the usual faults. Prints the same summary line as the other profiles.
# Extra arguments go to the suite, e.g.
#   bench/cluster_soak.sh --seed 1234 --duration 600 --fault-rate 10 --bin-dir build-fault/bin
# Build first: scripts/build.sh build-fault -DCMAKE_BUILD_TYPE=RelWithDebInfo
set -euo pipefail
SOAK_PROFILE=cluster-long exec "$(dirname "$0")/soak.sh" "$@"
