#!/usr/bin/env bash
# The fault-injection suite's long profile (SOAK_PROFILE, default long); extra arguments go to the
# suite. Usage and defaults: bench/rrbench/soak.py.
exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" soak "$@"
