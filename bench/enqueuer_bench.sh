#!/usr/bin/env bash
# Enqueuer benchmark, not part of ctest: drain throughput from 100,000 staged rows beside a pure-SQL
# drain of the same batches (what Redis and the payloads cost), and NOTIFY wake-up latency p50/p99.
#
#   bench/enqueuer_bench.sh [BUILD_DIR]        default build/ (use a Release build)
#   ROWS=100000 BATCHES="100 1000" SAMPLES=200 bench/enqueuer_bench.sh build-rel
#
# Starts its own PostgreSQL and Redis with durable commits (no --fast), Redis with a replica and
# three sentinels (scripts/local-servers.sh --sentinel), and stops them on exit.
#
# The acknowledged-push row drains ROWS with the default batch size twice, REDIS_MIN_REPLICAS=0
# then 1, the replica attached both times (so only the WAIT differs), and prints the 1/0 throughput
# ratio against the target of 0.7.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
BIN=$BUILD_DIR/bin/rocket-rides-enqueuer
ROWS=${ROWS:-100000}
BATCHES=${BATCHES:-"100 1000"}
SAMPLES=${SAMPLES:-200}
QUEUE=bench
[ -x "$BIN" ] || { echo "no $BIN: build it first (scripts/build.sh $BUILD_DIR -DCMAKE_BUILD_TYPE=Release)" >&2; exit 2; }

dir=$(mktemp -d)
daemon_pid=
cleanup() {
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  scripts/local-servers.sh stop "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
eval "$(scripts/local-servers.sh start "$dir" --sentinel)"
# The direct rows and the wake-up below talk to the master through REDIS_URL, as before.
unset REDIS_SENTINELS REDIS_SENTINEL_MASTER
export ENQUEUER_QUEUE=$QUEUE
export SIDEKIQ_TIMESTAMPS=seconds  # the latency below reads float seconds

sql() { psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -qtAX "$@"; }
redis() { redis-cli -u "$REDIS_URL" "$@"; }
now_ns() { date +%s%N; }

for f in sql/*.sql sql/functions/*.sql; do sql -f "$f" >/dev/null; done  # as migrate: tables, then functions

stage_rows() {
  sql -c "INSERT INTO staged_jobs (job_name, job_args)
          SELECT 'send_ride_receipt', jsonb_build_array(g, 'ride_' || g, jsonb_build_object('amount', 1500))
          FROM generate_series(1, $ROWS) g" >/dev/null
  sql -c "VACUUM ANALYZE staged_jobs" >/dev/null
}

# The enqueuer's own transaction, minus Redis and the payloads: BEGIN, the same claim, the same
# DELETE ... = ANY(ids), COMMIT, one batch after another in one session.
sql_drain_script() {
  local batch=$1
  local n=$(((ROWS + batch - 1) / batch + 1))
  for _ in $(seq 1 "$n"); do
    echo "BEGIN;"
    echo "WITH claimed AS (SELECT id, job_name, job_args::text AS args, jid,
                                  (extract(epoch FROM created_at) * 1000)::bigint AS created_ms
                           FROM staged_jobs ORDER BY id LIMIT $batch FOR UPDATE SKIP LOCKED)
          SELECT coalesce('{' || string_agg(id::text, ',') || '}', '{}') AS ids,
                 sum(length(job_name) + length(args) + length(jid) + created_ms % 2) AS bytes
          FROM claimed \\gset"
    echo "DELETE FROM staged_jobs WHERE id = ANY(:'ids'::bigint[]);"
    echo "COMMIT;"
  done
}

echo "enqueuer benchmark: $ROWS rows, durable commits, binary $BIN"
for batch in $BATCHES; do
  redis DEL "queue:$QUEUE" >/dev/null
  stage_rows
  t0=$(now_ns)
  ENQUEUER_BATCH_SIZE=$batch "$BIN" --once >"$dir/once.log"
  t1=$(now_ns)
  pushed=$(redis LLEN "queue:$QUEUE")
  left=$(sql -c "SELECT count(*) FROM staged_jobs")
  [ "$pushed" = "$ROWS" ] && [ "$left" = 0 ] || { echo "drain incomplete: pushed=$pushed left=$left" >&2; exit 1; }

  stage_rows
  sql_drain_script "$batch" >"$dir/drain.sql"
  t2=$(now_ns)
  sql -f "$dir/drain.sql" >/dev/null
  t3=$(now_ns)
  left=$(sql -c "SELECT count(*) FROM staged_jobs")
  [ "$left" = 0 ] || { echo "SQL drain incomplete: left=$left" >&2; exit 1; }

  awk -v rows="$ROWS" -v batch="$batch" -v e="$((t1 - t0))" -v s="$((t3 - t2))" 'BEGIN {
    printf "drain batch=%-5d enqueuer %.2fs (%.0f jobs/s)  pure SQL %.2fs (%.0f rows/s)  enqueuer/SQL time ratio %.2f\n",
      batch, e / 1e9, rows / (e / 1e9), s / 1e9, rows / (s / 1e9), e / s }'
done

# The cost of a replica-acknowledged push: WAIT 1 after each batch's LPUSH, in the same round trip.
declare -A replicated_rate
for min_replicas in 0 1; do
  redis DEL "queue:$QUEUE" >/dev/null
  stage_rows
  t0=$(now_ns)
  REDIS_MIN_REPLICAS=$min_replicas "$BIN" --once >"$dir/once-replicas.log"
  t1=$(now_ns)
  pushed=$(redis LLEN "queue:$QUEUE")
  [ "$pushed" = "$ROWS" ] || { echo "drain with REDIS_MIN_REPLICAS=$min_replicas incomplete: $pushed" >&2; exit 1; }
  replicated_rate[$min_replicas]=$(awk -v rows="$ROWS" -v e="$((t1 - t0))" 'BEGIN { printf "%.0f", rows / (e / 1e9) }')
  echo "drain batch=1000  REDIS_MIN_REPLICAS=$min_replicas  ${replicated_rate[$min_replicas]} jobs/s (one replica attached)"
done
awk -v a="${replicated_rate[1]}" -v b="${replicated_rate[0]}" 'BEGIN {
  r = a / b
  printf "%s  acknowledged push: REDIS_MIN_REPLICAS=1 %.0f jobs/s = %.2f x REDIS_MIN_REPLICAS=0 %.0f jobs/s (target >= 0.7)\n",
    (r >= 0.7 ? "PASS" : "FAIL"), a, r, b }'

# Wake-up latency: the daemon idles with a 60 s fallback poll, so only NOTIFY can deliver quickly.
# Each insert is followed by the NOTIFY a stager's EnqueuerWakeup sends after its commit (no trigger
# notifies since migration 007; the debounce itself is measured by tests/jobs/enqueuer_wakeup_test.cpp).
# Latency per job = enqueued_at (set by the enqueuer) - created_at (the staging transaction's
# start), both from this machine's clock (float epoch seconds, SIDEKIQ_TIMESTAMPS' default); the
# staging commit follows its start at once.
redis DEL "queue:$QUEUE" >/dev/null
ENQUEUER_IDLE_SLEEP=60 "$BIN" >"$dir/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do grep -q "listening for staged jobs" "$dir/daemon.log" && break; sleep 0.1; done
grep -q "listening for staged jobs" "$dir/daemon.log" || { cat "$dir/daemon.log" >&2; exit 1; }
for _ in $(seq 1 "$SAMPLES"); do
  echo "INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', '[1]');"
  echo "SELECT pg_notify('staged_jobs', '');"
  echo "SELECT pg_sleep(0.02);"
done >"$dir/latency.sql"
sql -f "$dir/latency.sql" >/dev/null
for _ in $(seq 1 100); do [ "$(redis LLEN "queue:$QUEUE")" = "$SAMPLES" ] && break; sleep 0.05; done
kill -TERM "$daemon_pid"
status=0
wait "$daemon_pid" || status=$?
daemon_pid=
[ "$status" = 0 ] || { echo "daemon exited $status after SIGTERM" >&2; exit 1; }
redis --raw LRANGE "queue:$QUEUE" 0 -1 | python3 -c '
import json, sys
lat = sorted(round((p["enqueued_at"] - p["created_at"]) * 1000) for p in map(json.loads, filter(None, sys.stdin.read().splitlines())))
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
print(f"wake-up latency over {len(lat)} jobs: p50 {pick(0.50)} ms  p99 {pick(0.99)} ms  max {lat[-1]} ms"
      f"  (a {60000} ms poll would average {30000} ms)")
'
echo "daemon stopped cleanly on SIGTERM (exit 0)"
