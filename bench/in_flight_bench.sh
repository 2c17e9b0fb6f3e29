#!/usr/bin/env bash
# The coalescer at low concurrency beside the article's floor, cold and steady. Usage, settings and what it prints: bench/rrbench/in_flight_bench.py.
exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" in_flight_bench "$@"
