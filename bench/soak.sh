#!/usr/bin/env bash
# The fault-injection suite's long profile: a soak under faults (default 20 minutes, 32 clients),
# printing the same summary line as the short profile. SOAK_PROFILE picks another long profile
# (bench/cluster_soak.sh sets cluster-long). Extra arguments go to the suite, e.g.
#   bench/soak.sh --seed 1234 --duration 600 --fault-rate 10 --bin-dir build-fault/bin
# Build first: scripts/build.sh build-fault -DCMAKE_BUILD_TYPE=RelWithDebInfo
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir=build-fault/bin
[ -x "$bin_dir/rocket-rides-api" ] || bin_dir=build/bin
python=/usr/bin/python3  # Debian's own: stdlib only, and no wrapper between us and the signals
[ -x "$python" ] || python=python3
exec "$python" tests/fault/fault_suite.py --profile "${SOAK_PROFILE:-long}" --duration 1200 --clients 32 --bin-dir "$bin_dir" "$@"
