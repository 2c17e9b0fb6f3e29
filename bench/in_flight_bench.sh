#!/usr/bin/env bash
# The coalescer at low concurrency: new keys with one batch of a kind in flight against two
# (DATABASE_BATCHES_IN_FLIGHT=1 and 2, two APIs on one database), side by side with pgbench running
# the article's minimum SQL (bench/article_minimum_sql.sql on bench/article_schema.sql) at 32 and
# 128 connections, on a durable (fsync on) throwaway PostgreSQL; and the state of the database that
# each run starts from, cold beside steady.
#
#   bench/in_flight_bench.sh [BUILD_DIR]   default build-apibench (built Release if binaries are missing)
#   env: DURATION=15 (seconds per run)  ROUNDS=3 (alternating rounds; each ratio is the median's)
#        FILL_SECONDS=30 (new keys at 128 that bring the database to its steady state)
#        STATS_SETTLE=11 (PostgreSQL 15 reports an idle backend's counts up to 10 s late)
#        ARTICLE_DB=fresh|grown (the article's database in each of its runs, below)
#        RESULTS_FILE=bench/results/in_flight_bench-<date>.md
#
# The article's floor runs on a database in a stated state, printed with its rows: with
# ARTICLE_DB=fresh (the default, as an independent harness measures it) the database is dropped
# and loaded again from bench/article_schema.sql before each of its runs; with ARTICLE_DB=grown it
# is the one database of the whole bench run, each run starting where the last one left it (this
# bench before 2026-12-06). In a grown one every run writes more full-page images per key (its
# random-key indexes have more pages to touch first after each checkpoint), its tables outgrow
# shared_buffers beside the API's database, and autovacuum runs in some of its runs and not others:
# docs/bench-results/2026-12-06-article-floor.md. The SQL is the article's either way.
#
# The cold state is the database `migrate` just made: empty tables, no statistics, the plans
# PostgreSQL makes for them, relations that grow page by page and WAL segments created rather than
# recycled; it is what a freshly created database sees for its first minutes. The steady state is
# the same database after FILL_SECONDS of new keys, VACUUM ANALYZE and a checkpoint: what a
# database in service looks like. Both are measured with the same API (two in flight); each run
# prints what PostgreSQL did for it per new key (sequential tuples read, index scans, WAL bytes,
# full-page images, pages the relations grew by, WAL segments, autovacuum and autoanalyze runs,
# checkpoints after the one each run starts with, the tables read sequentially most), which says
# where a cold run's time goes.
#
# Verdicts (informational, the exit status is the data check's): new keys at 32 with two in flight
# at least 1.2 x the article minimum, at 128 no loss against one in flight (at least 0.95 x), and
# commits per new key with each setting.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build-apibench}
duration=${DURATION:-15}
rounds=${ROUNDS:-3}
fill_seconds=${FILL_SECONDS:-30}
stats_settle=${STATS_SETTLE:-11}
article_db=${ARTICLE_DB:-fresh}
case $article_db in
  fresh | grown) ;;
  *) echo "in_flight_bench: ARTICLE_DB is fresh or grown, not '$article_db'" >&2; exit 2 ;;
esac
results_file=${RESULTS_FILE:-bench/results/in_flight_bench-$(date +%Y%m%d-%H%M%S).md}

# shellcheck source=bench/lib/release_binaries.sh
. bench/lib/release_binaries.sh
release_binaries "$build"
require_tools in_flight_bench wrk pgbench psql python3

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
# shellcheck source=bench/lib/data_check.sh
. bench/lib/data_check.sh

# What PostgreSQL did, read from its own views: "name value" lines. The WAL and checkpoint
# counters are the cluster's (nothing else runs during a measured run); the rest the database's.
state_counts() {  # url
  psql -X -Atq -F ' ' -v ON_ERROR_STOP=1 "$1" -c "/* api_bench */
    SELECT 'commits', xact_commit FROM pg_stat_database WHERE datname = current_database()
    UNION ALL SELECT 'keys', count(*) FROM idempotency_keys WHERE response_code = 201
    UNION ALL SELECT 'seq_tup_read', coalesce(sum(seq_tup_read), 0) FROM pg_stat_user_tables
    UNION ALL SELECT 'idx_scan', coalesce(sum(idx_scan), 0) FROM pg_stat_user_tables
    UNION ALL SELECT 'maintenance', coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables
    UNION ALL SELECT 'pages', (coalesce(sum(pg_total_relation_size(relid)), 0) / 8192)::bigint FROM pg_stat_user_tables
    UNION ALL SELECT 'wal_bytes', wal_bytes::bigint FROM pg_stat_wal
    UNION ALL SELECT 'wal_fpi', wal_fpi FROM pg_stat_wal
    UNION ALL SELECT 'wal_files', count(*) FROM pg_ls_waldir()
    UNION ALL SELECT 'checkpoints', checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"
}
count_of() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# Sequential scans per table so far: "table scans tuples" lines.
seq_scans() {  # url
  psql -X -Atq -F ' ' -v ON_ERROR_STOP=1 "$1" -c "/* api_bench */
    SELECT relname, seq_scan, seq_tup_read FROM pg_stat_user_tables ORDER BY relname"
}
# MultiXacts made so far and their members (cluster-wide: nothing else runs during a measured
# run), as of the last checkpoint: "name value" lines. Every transaction that inserts a row
# referencing a users row takes a KEY SHARE lock on it (the foreign key check); when another
# transaction holds one on the same row, the lock is a new MultiXact with all of them as members.
multixacts() {
  sql -F ' ' -c "/* api_bench */ SELECT 'multixacts', next_multixact_id::text::bigint FROM pg_control_checkpoint()
    UNION ALL SELECT 'mx_members', next_multi_offset::text::bigint FROM pg_control_checkpoint()"
}
# The state before a run, read by measure() after its checkpoint, right before the load starts.
state_url=""
state_before() {
  { state_counts "$state_url"; multixacts; } >"$dir/state-before.txt"
  seq_scans "$state_url" >"$dir/seq-before.txt"
}

# One measured run (COMMAND, which calls measure()) with the state counts of the database at URL
# around it (read after STATS_SETTLE on both sides, the MultiXacts after a checkpoint of their
# own); appends "label keys figures" to $dir/state.tsv and prints them per new key, with the
# tables read sequentially most.
counted_run() {  # label url command...
  local label=$1 before=$dir/state-before.txt after=$dir/state-after.txt n
  state_url=$2
  shift 2
  sleep "$stats_settle"
  before_load=state_before
  "$@"
  before_load=""
  sleep "$stats_settle"
  state_counts "$state_url" >"$after"
  seq_scans "$state_url" >"$dir/seq-after.txt"
  sql -c "/* api_bench */ CHECKPOINT"
  multixacts >>"$after"
  n=$(($(count_of "$after" keys) - $(count_of "$before" keys)))
  local figures="" name delta
  for name in commits seq_tup_read idx_scan wal_bytes wal_fpi pages wal_files maintenance checkpoints multixacts mx_members; do
    delta=$(($(count_of "$after" "$name") - $(count_of "$before" "$name")))
    figures+=" $name=$delta"
  done
  printf '%s\t%s\t%s\n' "$label" "$n" "$figures" >>"$dir/state.tsv"
  echo "    per new key ($n keys):$(awk -v n="$n" -v f="$figures" 'BEGIN {
    split(f, kv, " "); for (i in kv) { split(kv[i], p, "="); v[p[1]] = p[2] }
    if (n == 0) { print " none"; exit }
    printf " commits %.2f, seq tuples read %.1f, index scans %.1f, WAL %.0f B, full-page images %.3f,",
      v["commits"] / n, v["seq_tup_read"] / n, v["idx_scan"] / n, v["wal_bytes"] / n, v["wal_fpi"] / n
    printf " MultiXacts %.3f (%.1f members each),", v["multixacts"] / n, (v["multixacts"] ? v["mx_members"] / v["multixacts"] : 0)
    printf " pages grown per 1000 keys %.1f; WAL segments +%d, autovacuum/analyze runs %d, checkpoints %d",
      v["pages"] * 1000 / n, v["wal_files"], v["maintenance"], v["checkpoints"] }')"
  echo "    read sequentially most (table: scans, tuples per new key):$(awk -v n="$n" '
    NR == FNR { scans[$1] = $2; tuples[$1] = $3; next }
    { ds = $2 - scans[$1]; dt = $3 - tuples[$1]; if (ds > 0) printf "%d %s %d %.1f\n", dt, $1, ds, (n > 0 ? dt / n : 0) }' \
    "$dir/seq-before.txt" "$dir/seq-after.txt" | sort -rn | head -n 3 | awk '{ printf " %s: %d, %s;", $2, $3, $4 }')"
}
keys_run() {  # label connections url: the API's new keys at C connections against URL
  counted_run "$1" "$DATABASE_URL" wrk_run "$1" new_keys.lua "$2" "$duration" "$3"
}
# The article's minimum SQL at C connections, on its database in the state ARTICLE_DB names
# (fresh: dropped and loaded again from bench/article_schema.sql first), with the same counts.
article_counted_run() {  # label connections
  if [ "$article_db" = fresh ]; then
    sql -c "/* api_bench */ DROP DATABASE article" -c "/* api_bench */ CREATE DATABASE article"
    psql -X -q -v ON_ERROR_STOP=1 "$article_url" -f bench/article_schema.sql >>"$dir/article-schema.log" 2>&1
  fi
  counted_run "$1" "$article_url" article_run "$1" "$2"
}

workdir_create
# The API start_servers starts runs two batches of a kind in flight; the second, one.
export DATABASE_BATCHES_IN_FLIGHT=2
start_servers
unset DATABASE_BATCHES_IN_FLIGHT
api2_url=$api_url
api1_port=$(free_port "$mock_port" "$api_port")
DATABASE_BATCHES_IN_FLIGHT=1 start_api "$api1_port" "$dir/api-one-in-flight.log"
api_pids+=("$started_pid")
wait_port "$api1_port"
api1_url=http://127.0.0.1:$api1_port
pgbench_scripts
[ "$article_ok" = 1 ] || { echo "in_flight_bench: the article's schema did not load (above)" >&2; exit 1; }

: >"$dir/rows.tsv"
: >"$dir/state.tsv"
echo "runs of ${duration}s each (columns: rate p50 p99 2xx 409 5xx other):"
case $article_db in
  fresh) echo "the article minimum SQL: a fresh database for each of its runs (ARTICLE_DB=fresh)" ;;
  grown) echo "the article minimum SQL: one database grown through all the rounds (ARTICLE_DB=grown)" ;;
esac
echo "cold: the database migrate just made"
keys_run "cold API new keys 32 (2 in flight)" 32 "$api2_url"

echo "filling for ${fill_seconds}s, then VACUUM ANALYZE and a checkpoint (not measured)..."
BENCH_TOKEN=$token BENCH_RUN=fill-$RANDOM$RANDOM wrk -t2 -c128 -d"${fill_seconds}s" -s bench/api_bench/new_keys.lua \
  "$api2_url" >"$dir/fill.out" 2>&1
sleep 2
sql -c "/* api_bench */ VACUUM ANALYZE"
sql -c "/* api_bench */ CHECKPOINT"
warm_up "$api1_url"

echo "steady: the same database after the fill"
keys_run "steady API new keys 32 (2 in flight)" 32 "$api2_url"
for round in $(seq 1 "$rounds"); do
  case $((round % 3)) in
    1) order="article one two" ;;
    2) order="two article one" ;;
    0) order="one two article" ;;
  esac
  for c in 32 128; do
    for which in $order; do
      case $which in
        article) article_counted_run "article minimum SQL $c #$round" "$c" ;;
        one) keys_run "API new keys $c one in flight #$round" "$c" "$api1_url" ;;
        two) keys_run "API new keys $c two in flight #$round" "$c" "$api2_url" ;;
      esac
    done
  done
done
check_data

mkdir -p "$(dirname "$results_file")"
report=$(python3 bench/in_flight_verdicts.py "$dir/rows.tsv" "$dir/state.tsv" "$rounds" "$clk" "$article_db")
echo
echo "$report"
{
  echo "# bench/in_flight_bench.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, ${duration}s per run, $rounds rounds, ARTICLE_DB=$article_db"
  echo
  echo "$report"
} >"$results_file"
echo
echo "written to $results_file"
if [ "$data_ok" != 1 ]; then
  echo "!!! DATA CHECK FAILED: a benchmark that loses data is not a result" >&2
  exit 1
fi
