#!/usr/bin/env bash
# The API's benchmark: POST /rides under wrk beside pgbench running the same SQL, the floors, PgBouncer and HAProxy. Usage, settings and what it prints: bench/rrbench/api_bench.py.
exec /usr/bin/python3 "$(dirname "$0")/rrbench/run.py" api_bench "$@"
