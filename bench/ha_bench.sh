#!/usr/bin/env bash
# What the HA shape costs and how long a failover leaves clients without an answer. Usage, settings and what it prints: bench/rrbench/ha_bench.py.
exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" ha_bench "$@"
