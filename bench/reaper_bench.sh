#!/usr/bin/env bash
# The reaper's throughput and the API's p99 while it reaps (driver in Python, servers through tools/rrsuite). Usage, settings and what it prints: bench/rrbench/reaper_bench.py.
exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" reaper_bench "$@"
