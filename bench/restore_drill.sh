#!/usr/bin/env bash
# The restore drill, timed, on scripts/cluster.sh's plain production shape. Usage, settings and what it prints: bench/rrbench/restore_drill.py.
exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" restore_drill "$@"
