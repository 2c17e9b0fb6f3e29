#!/usr/bin/env bash
# The API's benchmark: POST /rides under wrk beside pgbench running the exact SQL of one request,
# on a durable (fsync on) throwaway PostgreSQL, with CPU per process, the API's memory, a check
# that the API executes the statements the pgbench script does, and a check that no ride, charge
# or receipt was lost ("a benchmark that loses data is not a result").
#
#   bench/api_bench.sh [BUILD_DIR]     default build-apibench (built Release if binaries are missing)
#   env: DURATION=15 (seconds per run)  MEMORY_SECONDS=60 (the mixed run at 128 before reading RSS)
#        ROUNDS=3 (alternating pairs for the verdicts that compare two figures: pgbench / API at 32,
#        API at 32 / 128; the disk of a shared machine drifts by tens of percent between runs, so
#        each verdict uses the median pair)
#        RESULTS_FILE=bench/results/api_bench-<date>.md (the table is written there too)
#
# Runs: pgbench new-key SQL at 8/32/128 clients; the API with new keys, replays of one key and a
# 90/10 mix of new keys and retries at 8/32/128 connections (wrk -t2, bench/api_bench/*.lua);
# pgbench replay SQL at 32. The production topology: new keys through PgBouncer
# (deploy/pgbouncer.ini, transaction pooling, an API with DATABASE_PREPARED_STATEMENTS=off) beside
# the direct API (prepared statements, straight to PostgreSQL) at 32 and 128, ROUNDS alternating
# pairs; then 512 connections through HAProxy (deploy/haproxy.cfg) in front of two such APIs,
# sampling PostgreSQL's client backends against PgBouncer's pool size.
# The design's floor: "pgbench minimum SQL 32 #r" (bench/minimum_sql.sql, the least SQL the design
# allows, on the product's schema) in the same alternating rounds; CPU per request of the API and
# of PostgreSQL for every run (from /proc); database round trips per new key and per replay that
# is not in the API's memory, counted by PgBouncer (SHOW STATS) independently of the API; commits
# per new key (pg_stat_database); "nginx same replay bytes N" beside "API replay N" (an nginx
# answering POST /rides with the API's replay answer, byte for byte); and a cost table at the end.
# The article's floor: "pgbench article minimum SQL 32 #r" and "... 128 #r", the seed article's
# minimum SQL (bench/article_minimum_sql.sql, -M prepared) on the article's schema
# (bench/article_schema.sql) in a database of its own, each paired in the rounds with "API new
# keys 32 #r" / "... 128 #r" (the floor the API is measured against: its rate, PostgreSQL's CPU
# per key and the API's CPU per key against pgbench's own client); the HOT share of the updates on
# the hot tables (pg_stat_user_tables) over the API's new-key runs and over the article's; round
# trips (PgBouncer) and commits (pg_stat_database) per new key at 32 and at 128.
# A part of these that fails says so in one line and the bench goes on; its verdicts then FAIL
# as "not measured".
#   env: STATS_SETTLE=11 (seconds to wait before reading pg_stat_database: an idle PostgreSQL 15
#        backend reports its counts up to 10 s late)  REPLAY_DB_KEYS=2000 (replays from the database)
# Exits non-zero if the data check or the statement-count check fails; the targets are
# informational.
#
# The parts: bench/lib/servers.sh starts the servers, bench/lib/cpu.sh accounts CPU from /proc,
# bench/lib/measure.sh runs the load generators and writes a row per run, bench/lib/counts.sh and
# bench/lib/allocations.sh count what a request costs, bench/lib/runs.sh orders the runs,
# bench/lib/data_check.sh checks the data, and bench/verdicts.py prints the table and the verdicts
# from the rows and the counts.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build-apibench}
duration=${DURATION:-15}
rounds=${ROUNDS:-3}
memory_seconds=${MEMORY_SECONDS:-60}
stats_settle=${STATS_SETTLE:-11}
replay_db_keys=${REPLAY_DB_KEYS:-2000}
results_file=${RESULTS_FILE:-bench/results/api_bench-$(date +%Y%m%d-%H%M%S).md}

# shellcheck source=bench/lib/release_binaries.sh
. bench/lib/release_binaries.sh
release_binaries "$build"
require_tools api_bench wrk pgbench psql curl python3 pgbouncer haproxy nginx

# shellcheck source=bench/ports.sh
. bench/ports.sh
# shellcheck source=bench/lib/servers.sh
. bench/lib/servers.sh
# shellcheck source=bench/lib/cpu.sh
. bench/lib/cpu.sh
# shellcheck source=bench/lib/measure.sh
. bench/lib/measure.sh
# shellcheck source=bench/lib/counts.sh
. bench/lib/counts.sh
# shellcheck source=bench/lib/allocations.sh
. bench/lib/allocations.sh
# shellcheck source=bench/lib/data_check.sh
. bench/lib/data_check.sh
# shellcheck source=bench/lib/runs.sh
. bench/lib/runs.sh

workdir_create
start_servers
pgbench_scripts

echo "runs of ${duration}s each (columns: rate p50 p99 2xx 409 5xx other):"
: >"$dir/rows.tsv"
runs_new_keys
runs_new_key_rounds
runs_replays
runs_mixed
start_pgbouncer
runs_pooled
run_haproxy
count_allocations
check_data

# The figures the verdicts use besides the rows, one "name<TAB>value" a line.
for name in clk rounds duration memory_seconds haproxy_label \
  sql_per_new_key sql_per_new_key_unprepared api_per_key pgb_per_key api_commits_per_key api_commits_per_key128 \
  rounds_commits_per_key minimum_statements minimum_commits article_statements article_commits \
  rt_new_key rt_wakeup xact_new_key rt_new_key128 rt_wakeup128 xact_new_key128 rt_replay rt_replays_sent xact_replay \
  hot_api_idempotency_keys hot_api_rides hot_api_audit_records hot_api_staged_jobs \
  hot_article_idempotency_keys hot_article_rides hot_article_audit_records hot_article_staged_jobs \
  allocs_new_key syscalls_new_key allocs_replay syscalls_replay rss_kib hwm_kib mock_rss_kib \
  haproxy_socket_errors haproxy_downs haproxy_none haproxy_nosrv \
  pg_backends_max pg_backends_samples pool_bound pool_bound_text max_db_connections keys_201 data_ok; do
  printf '%s\t%s\n' "$name" "${!name:-}"
done >"$dir/figures.tsv"
printf 'cores\t%s\n' "$(nproc)" >>"$dir/figures.tsv"

mkdir -p "$(dirname "$results_file")"
report=$(python3 bench/verdicts.py "$dir/rows.tsv" "$dir/figures.tsv")
echo
echo "$report"
echo "$report" >"$results_file"
echo
echo "written to $results_file"

if [ "$data_ok" != 1 ]; then
  echo "!!! DATA CHECK FAILED: a benchmark that loses data is not a result" >&2
  exit 1
fi
if [ "$statement_check_failed" = 1 ]; then
  echo "!!! STATEMENT COUNT MISMATCH (see above): the API/pgbench ratio compares different work" >&2
  exit 1
fi
