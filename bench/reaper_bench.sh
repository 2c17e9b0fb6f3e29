#!/usr/bin/env bash
# Reaps KEYS (default 1,000,000) expired idempotency keys with `rocket-rides-reaper --once` while
# wrk drives POST /rides, and reports keys/s and the API's p99 during the reap beside its p99 under
# the same load without the reaper, in the same run, on a durable (fsync on) throwaway PostgreSQL.
#
#   bench/reaper_bench.sh [BUILD_DIR]     default build-bench (built RelWithDebInfo if missing)
#   env: KEYS=1000000 BASELINE_SECONDS=15 CONNECTIONS=8 REAPER_BATCH_SIZE=1000 UNFINISHED_EVERY=1000
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build-bench}
keys=${KEYS:-1000000}
baseline_seconds=${BASELINE_SECONDS:-15}
connections=${CONNECTIONS:-8}
batch=${REAPER_BATCH_SIZE:-1000}
unfinished_every=${UNFINISHED_EVERY:-1000}

if [ ! -x "$build/bin/rocket-rides-reaper" ] || [ ! -x "$build/bin/rocket-rides-api" ]; then
  scripts/build.sh "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROCKET_RIDES_TESTS=OFF
fi
bin=$PWD/$build/bin

dir=$(mktemp -d /tmp/rocket-rides-bench.XXXXXX)
chmod 755 "$dir"  # the servers run as postgres when we are root
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  # Not this shell's children (started detached): until each is gone.
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  scripts/local-servers.sh stop "$dir/servers" >/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# shellcheck source=bench/ports.sh
. bench/ports.sh
now() { date +%s.%N; }
p99_of() { awk '$1 == "99%" { print $2 }' "$1"; }
non2xx_of() { local n; n=$(awk '/Non-2xx/ { print $NF }' "$1"); echo "${n:-0}"; }
requests_of() { awk '/requests in/ { print $1 }' "$1"; }

# Durable commits (no --fast): deleting keys is measured as production would pay for it.
eval "$(scripts/local-servers.sh start "$dir/servers")"
"$bin/rocket-rides-api" migrate >/dev/null 2>&1
token=$("$bin/rocket-rides-api" user create --email bench@rocketrides.example --stripe-customer cus_bench 2>/dev/null)

# The stand-in and the API as tools/rrsuite starts them (servers_cli.py), detached; each prints
# its pid.
rrsuite_server() { PYTHONPATH="$PWD/tools${PYTHONPATH:+:$PYTHONPATH}" python3 -m rrsuite server "$@"; }
mock_port=$(pick_port)
pids+=("$(STRIPE_API_KEY=sk_bench rrsuite_server provider "$bin" "$mock_port" "$dir/mock.log")")
api_port=$(pick_port)
pids+=("$(STRIPE_API_BASE=http://127.0.0.1:$mock_port STRIPE_API_KEY=sk_bench rrsuite_server api "$bin" "$api_port" \
  "$dir/api.log")")
wait_port "$mock_port"
wait_port "$api_port"

echo "inserting $keys expired keys (one in $unfinished_every unfinished)..."
psql -q "$DATABASE_URL" <<SQL
INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, recovery_point,
                              response_code, response_body, user_id, created_at, last_run_at, locked_at)
SELECT 'expired-key-' || lpad(g::text, 12, '0'), 'POST',
       '{"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712}', '/rides',
       CASE WHEN g % $unfinished_every = 0 THEN 'ride_created' ELSE 'finished' END,
       CASE WHEN g % $unfinished_every = 0 THEN NULL ELSE 201 END,
       CASE WHEN g % $unfinished_every = 0 THEN NULL ELSE '{"id":1}' END,
       (SELECT id FROM users LIMIT 1), now() - interval '4 days', now() - interval '4 days', NULL
FROM generate_series(1, $keys) g;
VACUUM ANALYZE idempotency_keys;
CHECKPOINT;
SQL

wrk_run() {  # name duration -> $dir/wrk-name.txt
  BENCH_RUN=$1 BENCH_TOKEN=$token wrk -t2 -c"$connections" -d"$2" --latency -s bench/reaper_bench.lua \
    "http://127.0.0.1:$api_port" >"$dir/wrk-$1.txt" 2>&1
}

echo "baseline: ${baseline_seconds}s of POST /rides without the reaper..."
wrk_run baseline "${baseline_seconds}s"

echo "reaping while the same load runs..."
# wrk itself must be the background job (not a subshell around it): it prints its statistics when
# it gets SIGINT, and a subshell would swallow the signal.
BENCH_RUN=reaping BENCH_TOKEN=$token wrk -t2 -c"$connections" -d3600s --latency -s bench/reaper_bench.lua \
  "http://127.0.0.1:$api_port" >"$dir/wrk-reaping.txt" 2>&1 &
wrk_pid=$!
pids+=("$wrk_pid")
sleep 2  # let the load settle before the reaper starts
start=$(now)
DATABASE_URL=$DATABASE_URL REAPER_BATCH_SIZE=$batch "$bin/rocket-rides-reaper" --once >"$dir/reaper.log" 2>&1
end=$(now)
kill -INT "$wrk_pid"  # wrk prints its statistics on SIGINT
wait "$wrk_pid" || true

left=$(psql -Atq "$DATABASE_URL" -c "SELECT count(*) FROM idempotency_keys WHERE idempotency_key LIKE 'expired-key-%'")
archived=$(psql -Atq "$DATABASE_URL" -c "SELECT count(*) FROM idempotency_keys_archive")
seconds=$(echo "$end - $start" | bc -l)
passes=$(grep -c 'msg="reaper pass"' "$dir/reaper.log" || true)

printf '\nreaper: %d keys in %.1f s = %.0f keys/s (%d batches of %d, %d archived, %d expired keys left)\n' \
  "$keys" "$seconds" "$(echo "$keys / $seconds" | bc -l)" "$passes" "$batch" "$archived" "$left"
printf 'API POST /rides p99 without the reaper: %s (%s requests, %s non-2xx)\n' \
  "$(p99_of "$dir/wrk-baseline.txt")" "$(requests_of "$dir/wrk-baseline.txt")" "$(non2xx_of "$dir/wrk-baseline.txt")"
printf 'API POST /rides p99 while reaping:      %s (%s requests, %s non-2xx)\n' \
  "$(p99_of "$dir/wrk-reaping.txt")" "$(requests_of "$dir/wrk-reaping.txt")" "$(non2xx_of "$dir/wrk-reaping.txt")"
