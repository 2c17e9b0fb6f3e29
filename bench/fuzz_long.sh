#!/usr/bin/env bash
# A long fuzzing run of every target (docs/testing.md#fuzzing). Usage, settings and what it prints: bench/rrbench/fuzz_long.py.
exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" fuzz_long "$@"
