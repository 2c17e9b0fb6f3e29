#!/usr/bin/env bash
# The enqueuer's drain throughput, acknowledged pushes and wake-up latency. Usage, settings and what it prints: bench/rrbench/enqueuer_bench.py.
exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" enqueuer_bench "$@"
