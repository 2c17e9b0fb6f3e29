#!/usr/bin/env bash
# How long migrations 012-014 take on a big database, and whether writers notice. Usage, settings and what it prints: bench/rrbench/migration_bench.py.
exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" migration_bench "$@"
