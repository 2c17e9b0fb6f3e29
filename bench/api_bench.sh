#!/usr/bin/env bash
# Issue 8's harness: POST /rides under wrk beside pgbench running the exact SQL of one request,
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
# pgbench replay SQL at 32. The production topology (issue 12): new keys through PgBouncer
# (deploy/pgbouncer.ini, transaction pooling, an API with DATABASE_PREPARED_STATEMENTS=off) beside
# the direct API (prepared statements, straight to PostgreSQL) at 32 and 128, ROUNDS alternating
# pairs; then 512 connections through HAProxy (deploy/haproxy.cfg) in front of two such APIs,
# sampling PostgreSQL's client backends against PgBouncer's pool size.
# Issue 14's rows: "pgbench minimum SQL 32 #r" (bench/minimum_sql.sql, the least SQL the design
# allows, on the product's schema) in the same alternating rounds; CPU per request of the API and
# of PostgreSQL for every run (from /proc); database round trips per new key and per replay that
# is not in the API's memory, counted by PgBouncer (SHOW STATS) independently of the API; commits
# per new key (pg_stat_database); "nginx same replay bytes N" beside "API replay N" (an nginx
# answering POST /rides with the API's replay answer, byte for byte); and a cost table at the end.
# A part of these that fails says so in one line and the bench goes on; its verdicts then FAIL
# as "not measured".
#   env: STATS_SETTLE=11 (seconds to wait before reading pg_stat_database: an idle PostgreSQL 15
#        backend reports its counts up to 10 s late)  REPLAY_DB_KEYS=2000 (replays from the database)
# Exits non-zero if the data check or the statement-count check fails; the targets are
# informational.
# The figures reach bench/verdicts.py by name, through figures.tsv, unseen by shellcheck.
# shellcheck disable=SC2034
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build-apibench}
duration=${DURATION:-15}
rounds=${ROUNDS:-3}
memory_seconds=${MEMORY_SECONDS:-60}
stats_settle=${STATS_SETTLE:-11}
replay_db_keys=${REPLAY_DB_KEYS:-2000}
results_file=${RESULTS_FILE:-bench/results/api_bench-$(date +%Y%m%d-%H%M%S).md}
connections=(8 32 128)

for b in rocket-rides-api rocket-rides-stripe-mock rocket-rides-bench-sql; do
  if [ ! -x "$build/bin/$b" ]; then
    scripts/build.sh "$build" -DCMAKE_BUILD_TYPE=Release -DROCKET_RIDES_TESTS=OFF
    break
  fi
done
bin=$(cd "$build/bin" && pwd)  # BUILD_DIR may be relative or absolute
for tool in wrk pgbench psql curl python3 pgbouncer haproxy nginx; do
  command -v "$tool" >/dev/null || { echo "api_bench: $tool is not installed" >&2; exit 1; }
done

dir=$(mktemp -d /tmp/rocket-rides-apibench.XXXXXX)
chmod 755 "$dir"  # the servers run as postgres when we are root
pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  scripts/local-servers.sh stop "$dir/servers" >/dev/null 2>&1 || true
  if [ "$status" -ne 0 ]; then
    # Keep the logs (not the data directory) for a look at what went wrong.
    local logs
    logs=$(mktemp -d /tmp/rocket-rides-apibench-logs.XXXXXX)
    cp "$dir"/*.log "$dir"/*.out "$dir/servers/pg/server.log" "$logs/" 2>/dev/null || true
    echo "api_bench: failed (exit $status); logs kept in $logs" >&2
  fi
  rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# shellcheck source=bench/ports.sh
. bench/ports.sh
# shellcheck source=scripts/pgbouncer-site.sh
. scripts/pgbouncer-site.sh
now() { date +%s.%N; }
sql() { psql -X -Atq -v ON_ERROR_STOP=1 "$DATABASE_URL" "$@"; }
# Commits of the database at URL so far (pg_stat_database). A PostgreSQL 15 backend reports its
# counts when it goes idle, at most once a second and otherwise 10 s later: the API's pool stays
# connected, so its last second of commits shows up only then (wait STATS_SETTLE first).
commits_of() {  # url
  psql -X -Atq -v ON_ERROR_STOP=1 "$1" -c "/* api_bench */ SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
}
field() {  # label column(1-based: rps p50 p99 2xx 409 5xx other, cores 8-13, ticks pg 14 api 15,
  # the APIs' context switches 16, ticks of the load generator 17)
  awk -F '\t' -v l="$1" -v c="$2" '$1 == l { split($2, v, " "); print v[c] }' "$dir/rows.tsv"
}
ratio() {  # numerator denominator [format]: prints nothing unless both are numbers and the denominator > 0
  awk -v a="$1" -v b="$2" -v f="${3:-%.3f}" 'BEGIN { if (a ~ /^-?[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf f, a / b }'
}

# --- CPU accounting from /proc (clock ticks: utime+stime, plus cutime+cstime of reaped children)
clk=$(getconf CLK_TCK)
ticks_of() {  # pid
  awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
machine_ticks() {  # busy ticks of all CPUs: user nice system irq softirq steal
  awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}
sum_ticks() {  # pids...: their ticks together (one that has exited counts 0)
  local pid t=0
  for pid in "$@"; do t=$((t + $(ticks_of "$pid"))); done
  echo "$t"
}
context_switches() {  # pids...: voluntary and involuntary context switches of all their threads
  local pid t=0
  for pid in "$@"; do
    t=$((t + $({ cat /proc/"$pid"/task/*/status 2>/dev/null || true; } |
      awk '/^(non)?voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }')))
  done
  echo "$t"
}
postgres_ticks() {  # the postmaster and all its children; exited backends are in its cutime/cstime
  local pm
  pm=$(head -n 1 "$dir/servers/pg/postmaster.pid")
  # A process may exit between the glob and the read: cat then fails, which pipefail must not see.
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pm="$pm" '{
    pid = $1; line = $0; sub(/^.*\) /, "", line); split(line, f, " ")
    if (pid == pm || f[2] == pm) t += f[12] + f[13] + f[14] + f[15]
  } END { print t + 0 }'
}

# --- servers
echo "starting durable PostgreSQL (pg_stat_statements) and Redis..."
servers_env=$(PG_EXTRA_OPTS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=on -c pg_stat_statements.max=10000" \
  scripts/local-servers.sh start "$dir/servers")
eval "$servers_env"
base_url=${DATABASE_URL%/*}
pgbench_url=$base_url/rocket_rides_pgbench
sql -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
sql -c "CREATE DATABASE rocket_rides_pgbench"

"$bin/rocket-rides-api" migrate >"$dir/migrate.log" 2>&1
DATABASE_URL=$pgbench_url "$bin/rocket-rides-api" migrate >>"$dir/migrate.log" 2>&1
token=$("$bin/rocket-rides-api" user create --email bench@rocketrides.example --stripe-customer cus_bench 2>>"$dir/migrate.log")
DATABASE_URL=$pgbench_url "$bin/rocket-rides-api" user create --email pgbench@rocketrides.example \
  --stripe-customer cus_bench >/dev/null 2>>"$dir/migrate.log"
pgbench_user=$(psql -X -Atq "$pgbench_url" -c "SELECT id FROM users WHERE email = 'pgbench@rocketrides.example'")

mock_port=$(pick_port)
# The stand-in provider with no injected failures, drops or latency.
PORT=$mock_port STRIPE_API_KEY=sk_bench MOCK_FAILURE_RATE=0 MOCK_DROP_RATE=0 MOCK_LATENCY_MS=0 \
  "$bin/rocket-rides-stripe-mock" >"$dir/mock.log" 2>&1 &
mock_pid=$!
pids+=("$mock_pid")
api_port=$(pick_port)
while [ "$api_port" = "$mock_port" ]; do api_port=$(pick_port); done
# Defaults for everything else; no LOG_LEVEL knob exists, so its logs go to a file. wrk sends all
# its connections (up to 128) with one user's token, which API_MAX_IN_FLIGHT_PER_USER (8 by
# default) would refuse with 429: this measures throughput, not the per-user limit.
PORT=$api_port STRIPE_API_BASE=http://127.0.0.1:$mock_port STRIPE_API_KEY=sk_bench API_MAX_IN_FLIGHT_PER_USER=1024 \
  "$bin/rocket-rides-api" >"$dir/api.log" 2>&1 &
api_pid=$!
pids+=("$api_pid")
# Whose CPU the "api" and "proxies" columns show: every API this script runs (an idle one costs
# nothing), and PgBouncer and HAProxy once started.
api_pids=("$api_pid")
proxy_pids=()
wait_port "$mock_port"
wait_port "$api_port"
api_url=http://127.0.0.1:$api_port
# The body of every POST /rides here (bench/api_bench/common.lua sends the same).
request_body='{"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712}'

# --- pgbench scripts, generated from the product's calls
# The product sends each phase as one call, "SELECT * FROM fn(...)" (issue 14): with the default
# settings a statement its session prepared once, its arguments as parameters, so pgbench replays
# these scripts with -M prepared, as the API sends them (product_protocol); where the sessions do
# not carry the bound it is the simple query "SET LOCAL statement_timeout = N; SELECT * FROM
# fn('...')", replayed with -M simple. The minimum SQL runs -M prepared, the cheapest way
# PostgreSQL offers.
"$bin/rocket-rides-bench-sql" new-key >"$dir/new_key.sql"
"$bin/rocket-rides-bench-sql" replay >"$dir/replay.sql"
sql_per_new_key=$("$bin/rocket-rides-bench-sql" count new-key)
# The pooled APIs (DATABASE_PREPARED_STATEMENTS=off) send each phase with its SET LOCAL.
sql_per_new_key_unprepared=$("$bin/rocket-rides-bench-sql" count new-key unprepared)
product_pgoptions=$("$bin/rocket-rides-bench-sql" pgoptions)
product_protocol=$("$bin/rocket-rides-bench-sql" protocol)
pgbench_defines=()
while IFS= read -r line; do pgbench_defines+=(-D "$line"); done < <("$bin/rocket-rides-bench-sql" defines)
pgbench_defines+=(-D "user_id=$pgbench_user" -D lock_token=6f1c2b9e-8a4d-4c3b-9e2f-5d7a1b0c3e4f)

# The minimum SQL (issue 14), on the same database and schema as the new-key SQL. One request
# first, so that a script the schema refuses is found here, once, not in every round.
minimum_sql=bench/minimum_sql.sql
minimum_ok=1
if ! pgbench -n -M prepared -c 1 -t 1 -f "$minimum_sql" "${pgbench_defines[@]}" "$pgbench_url" >"$dir/minimum-check.out" 2>&1; then
  minimum_ok=0
  echo "api_bench: $minimum_sql fails on the product's schema; the pgbench minimum SQL rows are left out:" >&2
  tail -n 5 "$dir/minimum-check.out" >&2
fi

# --- one measured run: $1 = row label, then the load generator's command line.
# Writes "label<TAB>rps p50 p99 2xx 409 5xx other pg api mock loadgen proxies other-cpu pg-ticks
# api-ticks api-switches loadgen-ticks" to $dir/rows.tsv (the ticks are CPU clock ticks of
# PostgreSQL, of the APIs and of the load generator over the run, for CPU per request). If set,
# the command in $before_load runs after the checkpoint, just before the load starts. A failed run
# ends the bench, unless measure_soft=1 (issue 14's additions): then it says so and returns 1, and
# no row is written.
run_index=0
before_load=""
measure_soft=0
measure_failed() {  # label what: exits, or returns 1 when measure_soft=1
  if [ "$measure_soft" = 1 ]; then
    echo "  api_bench: $1: $2; this row is left out and the bench goes on" >&2
    return 1
  fi
  echo "api_bench: $1: $2" >&2
  exit 1
}
soft() {  # command...: runs it with measure_soft=1
  local rc=0
  measure_soft=1
  "$@" || rc=$?
  measure_soft=0
  return "$rc"
}
measure() {
  local label=$1 kind=$2 out
  shift 2
  run_index=$((run_index + 1))
  out=$dir/run-$run_index.out
  sql -c "/* api_bench */ CHECKPOINT"  # every run starts without a checkpoint's backlog
  if [ -n "$before_load" ]; then $before_load; fi
  local pg0 api0 mock0 proxy0 all0 t0 pg1 api1 mock1 proxy1 all1 t1 gen switches0 switches1
  all0=$(machine_ticks)
  pg0=$(postgres_ticks)
  api0=$(sum_ticks "${api_pids[@]}")
  switches0=$(context_switches "${api_pids[@]}")
  mock0=$(ticks_of "$mock_pid")
  proxy0=$(sum_ticks "${proxy_pids[@]}")
  t0=$(now)
  # The wrapper shell waits for the load generator, so its own stat then holds the generator's
  # CPU as cutime+cstime.
  OUT=$out bash -c '"$@" >"$OUT" 2>&1; rc=$?; cat /proc/$$/stat >"$OUT.cpu"; exit $rc' _ "$@" || {
    tail -n 20 "$out" >&2
    measure_failed "$label" "the load generator failed (its output above)" || return 1
  }
  t1=$(now)
  pg1=$(postgres_ticks)
  api1=$(sum_ticks "${api_pids[@]}")
  switches1=$(context_switches "${api_pids[@]}")
  mock1=$(ticks_of "$mock_pid")
  proxy1=$(sum_ticks "${proxy_pids[@]}")
  all1=$(machine_ticks)
  gen=$(awk '{ sub(/^.*\) /, ""); print $14 + $15 }' "$out.cpu")
  local cores
  cores=$(awk -v clk="$clk" -v wall="$(echo "$t1 - $t0" | bc -l)" -v pg=$((pg1 - pg0)) -v api=$((api1 - api0)) \
    -v mock=$((mock1 - mock0)) -v gen="$gen" -v proxy=$((proxy1 - proxy0)) -v all=$((all1 - all0)) \
    'BEGIN { other = all - pg - api - mock - gen - proxy; if (other < 0) other = 0
      printf "%.2f %.2f %.2f %.2f %.2f %.2f", pg / clk / wall, api / clk / wall, mock / clk / wall, gen / clk / wall,
        proxy / clk / wall, other / clk / wall }')
  local stats
  if [ "$kind" = wrk ]; then
    local r
    r=$(grep '^BENCH_RESULT' "$out") || {
      cat "$out" >&2
      measure_failed "$label" "no result line (the load generator's output above)" || return 1
    }
    # shellcheck disable=SC2001
    stats=$(echo "$r" | sed 's/^BENCH_RESULT //' | awk '{
      for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      printf "%s %s %s %s %s %s %s", v["rps"], v["p50_ms"], v["p99_ms"], v["s2xx"], v["s409"], v["s5xx"], v["sother"] + v["socket_errors"]
    }')
    echo "$r" >"$out.result"
  else
    local tps done_tx failed p50 p99
    tps=$(awk '/^tps = / { print $3 }' "$out")
    done_tx=$(awk '/number of transactions actually processed/ { print $NF }' "$out")
    failed=$(awk '/number of failed transactions/ { print $5 }' "$out")
    read -r p50 p99 < <(cat "$dir/pgbench-log-$run_index".* | awk '$3 ~ /^[0-9]+$/ { print $3 / 1000 }' | sort -n |
      awk '{ v[NR] = $1 } END { if (NR == 0) { print "- -"; exit }
        i50 = int(NR * 0.50); if (i50 < 1) i50 = 1; i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
        printf "%.3f %.3f\n", v[i50], v[i99] }')
    rm -f "$dir/pgbench-log-$run_index".*
    stats="$(printf '%.1f' "$tps") $p50 $p99 $done_tx 0 0 ${failed:-0}"
  fi
  printf '%s\t%s %s %s %s %s %s\n' "$label" "$stats" "$cores" $((pg1 - pg0)) $((api1 - api0)) \
    $((switches1 - switches0)) "$gen" >>"$dir/rows.tsv"
  # CPU per request (per pgbench transaction, one whole request, for pgbench): ticks / answers.
  local per_request
  per_request=$(awk -v n="$(echo "$stats" | awk '{ print $4 }')" -v pg=$((pg1 - pg0)) -v api=$((api1 - api0)) -v clk="$clk" \
    'BEGIN { if (n > 0) printf "%.0f/%.0f", pg * 1e6 / clk / n, api * 1e6 / clk / n; else print "-/-" }')
  printf '  %-36s %s | cores pg/api/mock/loadgen/proxies/other %s | CPU us per request pg/api %s\n' \
    "$label" "$stats" "$cores" "$per_request"
}

pgbench_run() {  # label script clients [protocol: given for the minimum SQL only]
  # The product's scripts run as the API sends them (product_protocol: prepared calls in the
  # default mode) in sessions set up as the API's pooled ones are (product_pgoptions); the minimum
  # SQL (-M prepared) in plain ones.
  local pgoptions="" protocol=${4:-}
  if [ -z "$protocol" ]; then
    protocol=$product_protocol
    pgoptions=$product_pgoptions
  fi
  measure "$1" pgbench env PGOPTIONS="$pgoptions" pgbench -n -M "$protocol" -c "$3" -j 2 -T "$duration" -f "$2" \
    "${pgbench_defines[@]}" -l --log-prefix="$dir/pgbench-log-$((run_index + 1))" "$pgbench_url"
}
wrk_run() {  # label lua connections seconds [url [wrk options...]]
  local label=$1 lua=$2 c=$3 seconds=${4:-$duration} url=${5:-$api_url}
  shift $(($# < 5 ? $# : 5))
  measure "$label" wrk env BENCH_TOKEN="$token" BENCH_RUN="r$((run_index + 1))-$RANDOM$RANDOM" \
    BENCH_REPLAY_KEY="${replay_key:-}" wrk -t2 -c"$c" -d"${seconds}s" --latency "$@" -s "bench/api_bench/$lua" "$url"
}

echo "runs of ${duration}s each (columns: rate p50 p99 2xx 409 5xx other):"
: >"$dir/rows.tsv"
for c in "${connections[@]}"; do pgbench_run "pgbench new-key SQL $c" "$dir/new_key.sql" "$c"; done

# Warm up the API (connections, prepared statements, token cache) outside the measured runs.
BENCH_TOKEN=$token BENCH_RUN=warmup-$RANDOM$RANDOM wrk -t2 -c32 -d3s -s bench/api_bench/new_keys.lua "$api_url" \
  >"$dir/warmup.out" 2>&1

# Statements per new key, counted by PostgreSQL while one API serves new keys at 32: reset right
# before that run, read right after it, so that they hold that API's statements only (pgbench
# uses a database of its own, the other API is idle, this script's statements say api_bench).
statement_check_failed=0
statements_reset() {
  sql -c "/* api_bench */ SELECT pg_stat_statements_reset()" >/dev/null
  created0=$(sql -c "/* api_bench */ SELECT count(*) FROM idempotency_keys WHERE response_code = 201")
}
statements_read() {  # NAME (file name) DESCRIPTION [EXPECTED per key, default the script's]; sets per_key
  local name=$1 what=$2 expected=${3:-$sql_per_new_key} created1 statements created
  sleep 1  # requests in flight when wrk stopped finish
  created1=$(sql -c "/* api_bench */ SELECT count(*) FROM idempotency_keys WHERE response_code = 201")
  sql -F $'\t' -c "/* api_bench */ SELECT calls, left(regexp_replace(query, '\s+', ' ', 'g'), 110)
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
    WHERE d.datname = current_database() AND query NOT LIKE '%/* api_bench */%' ORDER BY calls DESC" \
    >"$dir/statements-$name.tsv"
  # The enqueuer wake-ups are not the request's SQL (see wakeup_notifies): counted apart.
  wakeup_statements=$(awk -F '\t' '$2 == "SELECT * FROM pg_notify($1, $2)" || $2 == "SET LOCAL statement_timeout = 5000" { n += $1 }
    END { print n + 0 }' "$dir/statements-$name.tsv")
  statements=$(awk -F '\t' '{ n += $1 } END { print n + 0 }' "$dir/statements-$name.tsv")
  statements=$((statements - wakeup_statements))
  created=$((created1 - created0))
  created_keys=$created
  per_key=$(awk -v s="$statements" -v k="$created" 'BEGIN { if (k > 0) printf "%.3f", s / k; else print "nan" }')
  echo
  echo "statements per new key, $what: $per_key ($statements statements / $created keys answered 201, besides" \
    "$wakeup_statements of the enqueuer wake-up), expected $expected (the pgbench script: $sql_per_new_key)"
  if ! awk -v a="$per_key" -v p="$expected" 'BEGIN { d = a - p; if (d < 0) d = -d; exit !(a == a + 0 && d <= 0.02 * p) }'; then
    statement_check_failed=1
    echo "!!! STATEMENT COUNT MISMATCH: $what runs $per_key statements per new key, expected $expected" \
      "from the product's calls: the pgbench baseline is not the request's SQL. Statements seen (calls, query):" >&2
    head -n 20 "$dir/statements-$name.tsv" >&2
  fi
  echo "  per new key: calls / keys, query"
  awk -F '\t' -v k="$created" 'k > 0 && NR <= 12 { printf "  %6.3f  %s\n", $1 / k, $2 }' "$dir/statements-$name.tsv"
  echo
}

# The same run counts the API's commits per new key (pg_stat_database, read after its pool's
# counts have settled on both sides of the run).
api_commits_per_key=""
for c in "${connections[@]}"; do
  if [ "$c" = 32 ]; then
    sleep "$stats_settle"
    api_commits0=$(commits_of "$DATABASE_URL" || true)
    statements_reset
  fi
  wrk_run "API new keys $c" new_keys.lua "$c"
  if [ "$c" = 32 ]; then
    statements_read direct "the API straight to PostgreSQL (prepared statements)"
    api_per_key=$per_key
    sleep "$stats_settle"
    api_commits1=$(commits_of "$DATABASE_URL" || true)
    api_commits_per_key=$(ratio "$((${api_commits1:-0} - ${api_commits0:-0}))" "$created_keys" %.2f)
    if [ -z "$api_commits0" ] || [ -z "$api_commits1" ]; then api_commits_per_key=""; fi
    echo "commits per new key, the API straight to PostgreSQL: ${api_commits_per_key:-not measured}" \
      "($((${api_commits1:-0} - ${api_commits0:-0})) commits in pg_stat_database / $created_keys keys answered 201)"
    echo
  fi
done

# The minimum SQL's costs per request: its statements, from the script (pg_stat_statements counts
# a prepared BEGIN or COMMIT only at its first execution on a connection), each one round trip
# (the script has no pipeline: pgbench sends a command and waits for its answer); its commits
# from pg_stat_database around its first round's run (pgbench's backends report at exit, so a
# second is enough to settle).
minimum_commits="" minimum_commits0=""
minimum_statements=$(awk '/^[[:space:]]*--/ { next } /^[[:space:]]*\\/ { if ($1 ~ /pipeline/) pipeline = 1; next }
  /;[[:space:]]*$/ || /\\gset/ { n++ } END { if (!pipeline && n > 0) print n }' "$minimum_sql")
minimum_counts_begin() {
  sleep 1
  minimum_commits0=$(commits_of "$pgbench_url") || return 1
}
minimum_counts_end() {
  local commits1 done_tx
  [ -n "${minimum_commits0:-}" ] || return 1
  sleep 1
  commits1=$(commits_of "$pgbench_url") || return 1
  done_tx=$(field "pgbench minimum SQL 32 #1" 4)
  minimum_commits=$(ratio "$((commits1 - minimum_commits0))" "$done_tx" %.2f)
  echo "  pgbench minimum SQL per request: ${minimum_statements:-?} statements (round trips) in the script," \
    "${minimum_commits:-?} commits ($((commits1 - minimum_commits0)) commits in pg_stat_database / $done_tx transactions)"
}

# Side by side: pgbench and the API alternate at 32, so a drift of the machine hits both.
# The same for "no collapse at 128": 32 and 128 alternate, for new keys and for mixed traffic.
# pgbench running the minimum SQL joins each round, right after the product's SQL.
for round in $(seq 1 "$rounds"); do
  pgbench_run "pgbench new-key SQL 32 #$round" "$dir/new_key.sql" 32
  if [ "$minimum_ok" = 1 ]; then
    if [ "$round" = 1 ]; then
      minimum_counts_begin || echo "  api_bench: cannot read the minimum SQL's counts before its run" >&2
    fi
    if soft pgbench_run "pgbench minimum SQL 32 #$round" "$minimum_sql" 32 prepared && [ "$round" = 1 ]; then
      minimum_counts_end || echo "  api_bench: cannot read the minimum SQL's statement and commit counts" >&2
    fi
  fi
  wrk_run "API new keys 32 #$round" new_keys.lua 32
  wrk_run "API new keys 128 #$round" new_keys.lua 128
done

replay_key=replay-bench-key-$RANDOM$RANDOM-$RANDOM$RANDOM
post_rides() {  # base-url key output-prefix: POST /rides as the wrk scripts send it; prints the status
  curl -s -D "$3.headers" -o "$3.body" -w '%{http_code}' -X POST "$1/rides" \
    -H "Authorization: Bearer $token" -H "Idempotency-Key: $2" -H "Content-Type: application/json" \
    -d "$request_body"
}
status=$(post_rides "$api_url" "$replay_key" "$dir/replay-first")
[ "$status" = 201 ] || { echo "api_bench: creating the replay key answered $status" >&2; cat "$dir/replay-first.body" >&2; exit 1; }

# nginx answering POST /rides with the bytes of the API's replay answer (issue 14): the same
# request, the same answer, nothing else done. Its CPU counts in the "api" column of its rows.
nginx_pid=""
nginx_start() {
  local status
  status=$(post_rides "$api_url" "$replay_key" "$dir/replay-answer") || return 1
  [ "$status" = 201 ] || { echo "  api_bench: the replay answered $status" >&2; return 1; }
  nginx_port=$(pick_port) || return 1
  while [ "$nginx_port" = "$mock_port" ] || [ "$nginx_port" = "$api_port" ]; do nginx_port=$(pick_port) || return 1; done
  python3 bench/api_bench/nginx_same_answer.py "$dir/replay-answer.headers" "$dir/replay-answer.body" \
    "$nginx_port" "$dir/nginx" || return 1
  nginx -p "$dir/nginx/" -c "$dir/nginx/nginx.conf" -e "$dir/nginx/error.log" -g 'daemon off;' \
    </dev/null >"$dir/nginx.log" 2>&1 &
  nginx_pid=$!
  pids+=("$nginx_pid")
  wait_port "$nginx_port" || { cat "$dir/nginx.log" "$dir/nginx/error.log" >&2 2>/dev/null; return 1; }
  status=$(post_rides "http://127.0.0.1:$nginx_port" "$replay_key" "$dir/nginx-answer") || return 1
  if [ "$status" != 201 ] || ! cmp -s "$dir/replay-answer.body" "$dir/nginx-answer.body"; then
    echo "  api_bench: nginx answers $status with a body other than the API's" >&2
    return 1
  fi
  header_names() { tr -d '\r' <"$1" | awk -F: 'NR > 1 && NF > 1 { printf "%s%s", (n++ ? ", " : ""), $1 }'; }
  echo "nginx (port $nginx_port) answers POST /rides as the API replays: 201, the same" \
    "$(wc -c <"$dir/replay-answer.body")-byte body; headers API: $(header_names "$dir/replay-answer.headers");" \
    "nginx: $(header_names "$dir/nginx-answer.headers")"
}
nginx_run() {  # connections [label suffix]
  local saved=("${api_pids[@]}") rc=0
  # shellcheck disable=SC2207
  api_pids=("$nginx_pid" $(pgrep -P "$nginx_pid" || true))
  soft wrk_run "nginx same replay bytes $1${2:-}" replay.lua "$1" "$duration" "http://127.0.0.1:$nginx_port" || rc=$?
  api_pids=("${saved[@]}")
  return "$rc"
}
nginx_ok=0
if nginx_start; then
  nginx_ok=1
else
  echo "api_bench: nginx could not answer with the API's replay bytes; the nginx rows are left out" >&2
fi
# Each API replay run and its nginx run back to back, at each connection count.
for c in "${connections[@]}"; do
  wrk_run "API replay $c" replay.lua "$c"
  if [ "$nginx_ok" = 1 ]; then nginx_run "$c" || true; fi
done
# The verdict's pairs at 32: ROUNDS alternating runs, as for the other ratios. nginx's own rate
# moved by 1.4x between single runs on this machine (49,000 to 71,000 req/s), more than the change
# a single pair can show.
if [ "$nginx_ok" = 1 ]; then
  for round in $(seq 1 "$rounds"); do
    wrk_run "API replay 32 #$round" replay.lua 32
    nginx_run 32 " #$round" || true
  done
fi
if [ -n "$nginx_pid" ]; then
  kill "$nginx_pid" 2>/dev/null || true
  wait "$nginx_pid" 2>/dev/null || true
fi
for c in "${connections[@]}"; do wrk_run "API mixed $c" mixed.lua "$c"; done
for round in $(seq 1 "$rounds"); do
  wrk_run "API mixed 32 #$round" mixed.lua 32
  wrk_run "API mixed 128 #$round" mixed.lua 128
done

pgbench_replay_key=$(psql -X -Atq "$pgbench_url" -c "SELECT idempotency_key FROM idempotency_keys WHERE response_code = 201 LIMIT 1")
pgbench_defines+=(-D "replay_key=$pgbench_replay_key")
pgbench_run "pgbench replay SQL 32" "$dir/replay.sql" 32

echo "memory: ${memory_seconds}s of mixed traffic at 128 connections..."
wrk_run "API mixed 128 (${memory_seconds}s)" mixed.lua 128 "$memory_seconds"
rss_kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$api_pid/status")
hwm_kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/$api_pid/status")
mock_rss_kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$mock_pid/status")

# --- the production topology (issue 12): PgBouncer running deploy/pgbouncer.ini, written by the
# same code as scripts/cluster.sh's, and two APIs through it without prepared statements.
pg_port=$(sed -n 's/^PG_PORT=//p' "$dir/servers/ports")
pgbouncer_port=$(pick_port)
pgbouncer_site_write "$dir/pgbouncer" "$pg_port" "$pgbouncer_port" "bench/api_bench.sh for this run"
pgbouncer_cmd=(pgbouncer "$dir/pgbouncer/pgbouncer.ini")
if [ "$(id -u)" -eq 0 ]; then
  # PgBouncer refuses to run as root; setpriv execs in place, so $! is PgBouncer itself.
  pgbouncer_cmd=(setpriv --reuid=postgres --regid=postgres --init-groups "${pgbouncer_cmd[@]}")
fi
echo
echo "starting PgBouncer (deploy/pgbouncer.ini) and two APIs through it (DATABASE_PREPARED_STATEMENTS=off)..."
"${pgbouncer_cmd[@]}" </dev/null >"$dir/pgbouncer.log" 2>&1 &
pgbouncer_pid=$!
pids+=("$pgbouncer_pid")
proxy_pids+=("$pgbouncer_pid")
pooled_url=postgresql://postgres@127.0.0.1:$pgbouncer_port/rocket_rides
for _ in $(seq 1 100); do
  if psql -X -Atq "$pooled_url" -c 'SELECT 1' >/dev/null 2>&1; then break; fi
  kill -0 "$pgbouncer_pid" 2>/dev/null || { echo "api_bench: PgBouncer exited:" >&2; tail -n 20 "$dir/pgbouncer.log" >&2; exit 1; }
  sleep 0.1
done
psql -X -Atq "$pooled_url" -c 'SELECT 1' >/dev/null
pgbouncer_policy_check "$pgbouncer_port" || { echo "api_bench: PgBouncer does not run deploy/pgbouncer.ini" >&2; exit 1; }
pgbouncer_setting() {
  psql -X -At -h 127.0.0.1 -p "$pgbouncer_port" -U postgres -d pgbouncer -c 'SHOW CONFIG' |
    awk -F'|' -v k="$1" '$1 == k { print $2 }'
}
pool_size=$(pgbouncer_setting default_pool_size)
reserve_pool_size=$(pgbouncer_setting reserve_pool_size)
max_db_connections=$(pgbouncer_setting max_db_connections)
pgb_ports=()
pgb_pids=()
for i in 1 2; do
  port=$(pick_port)
  while [ "$port" = "$mock_port" ] || [ "$port" = "$api_port" ] || [ "$port" = "$pgbouncer_port" ] ||
    [ "$port" = "${pgb_ports[0]:-}" ]; do port=$(pick_port); done
  DATABASE_URL=$pooled_url DATABASE_PREPARED_STATEMENTS=off PORT=$port \
    STRIPE_API_BASE=http://127.0.0.1:$mock_port STRIPE_API_KEY=sk_bench API_MAX_IN_FLIGHT_PER_USER=1024 \
    "$bin/rocket-rides-api" >"$dir/api-pgbouncer$i.log" 2>&1 &
  pgb_pids+=("$!")
  pgb_ports+=("$port")
  pids+=("$!")
  api_pids+=("$!")
done
for port in "${pgb_ports[@]}"; do
  wait_port "$port"
  BENCH_TOKEN=$token BENCH_RUN=warmup-$RANDOM$RANDOM wrk -t2 -c32 -d3s -s bench/api_bench/new_keys.lua \
    "http://127.0.0.1:$port" >>"$dir/warmup.out" 2>&1
done
pgb_url=http://127.0.0.1:${pgb_ports[0]}

# --- database round trips, counted by PgBouncer (issue 14): SHOW STATS on its admin console counts
# a "query" from a client's first message until PostgreSQL's ReadyForQuery, i.e. one round trip,
# and a transaction per server transaction, whatever the API thinks it sends. The pooled APIs'
# readiness pings go through PgBouncer too: their rate, measured idle, is taken off.
pgbouncer_counts() {  # prints "queries transactions" of database rocket_rides so far
  psql -X -A -F '|' -h 127.0.0.1 -p "$pgbouncer_port" -U postgres -d pgbouncer -c 'SHOW STATS' |
    awk -F'|' 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      $1 == "rocket_rides" { q = $col["total_query_count"]; x = $col["total_xact_count"] }
      END { if (q == "") exit 1; print q, x }'
}
rt_idle_rate="" rt_new_key="" xact_new_key="" rt_replay="" xact_replay="" rt_replays_sent=""
rt_idle() {  # sets rt_idle_rate: PgBouncer queries per second while no request is sent
  local q0 x0 q1 x1 t0 t1
  sleep 2  # the warm-ups' requests still in flight when wrk stopped finish first
  t0=$(now)
  read -r q0 x0 < <(pgbouncer_counts) || return 1
  sleep 5
  read -r q1 x1 < <(pgbouncer_counts) || return 1
  t1=$(now)
  rt_idle_rate=$(awk -v q=$((q1 - q0)) -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", q / (t1 - t0) }')
  rt_idle_xact=$(awk -v x=$((x1 - x0)) -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", x / (t1 - t0) }')
  echo "PgBouncer while idle: $rt_idle_rate round trips and $rt_idle_xact transactions a second (readiness pings)"
}
# Around one run of new keys through PgBouncer: rt_new_begin before it, rt_new_end after
# statements_read (which waits for requests in flight and counts the keys answered 201).
# The enqueuer wake-ups (a debounced NOTIFY on the API's own background connection, at most one
# per ENQUEUER_WAKEUP_DEBOUNCE, not in any request's path) go through PgBouncer too: counted by
# pg_stat_statements (the only NOTIFYs in the database during the run), they are reported apart
# from the requests' round trips.
wakeup_notifies() {  # NOTIFYs run in the API's database so far
  sql -c "/* api_bench */ SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s
    JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() AND s.query = 'SELECT * FROM pg_notify(\$1, \$2)'"
}
rt_new_begin() {
  rt_t0=$(now)
  rt_w0=$(wakeup_notifies)
  read -r rt_q0 rt_x0 < <(pgbouncer_counts) || return 1
  rt_id0=$(sql -c "/* api_bench */ SELECT coalesce(max(id), 0) FROM idempotency_keys") || return 1
}
rt_new_end() {
  local q1 x1 t1 idle
  read -r q1 x1 < <(pgbouncer_counts) || return 1
  t1=$(now)
  wakeups=$(($(wakeup_notifies) - rt_w0))
  rt_id1=$(sql -c "/* api_bench */ SELECT coalesce(max(id), 0) FROM idempotency_keys") || return 1
  idle=$(awk -v r="${rt_idle_rate:-0}" -v a="$rt_t0" -v b="$t1" 'BEGIN { printf "%.0f", r * (b - a) }')
  rt_new_key=$(ratio "$((q1 - rt_q0 - idle - wakeups))" "$created_keys" %.2f)
  rt_wakeup=$(ratio "$wakeups" "$created_keys" %.3f)
  idle=$(awk -v r="${rt_idle_xact:-0}" -v a="$rt_t0" -v b="$t1" 'BEGIN { printf "%.0f", r * (b - a) }')
  xact_new_key=$(ratio "$((x1 - rt_x0 - idle - wakeups))" "$created_keys" %.2f)
  echo "round trips per new key: ${rt_new_key:-not measured} (PgBouncer: $((q1 - rt_q0)) queries, less the" \
    "idle rate and $wakeups enqueuer wake-ups, / $created_keys keys answered 201; transactions per new key:" \
    "${xact_new_key:-?}; wake-ups per new key, on the API's own connection: ${rt_wakeup:-?})"
  echo
}
# Replays that are not in the API's memory: keys the first pooled API finished in that run, each
# replayed once to the second pooled API, which has never seen them (its memory holds only the
# keys it finished itself), so every answer comes from the database.
rt_replays() {
  local keys status q0 x0 q1 x1 t0 t1 out sent created other idle
  keys=$dir/replay-db-keys.txt
  sleep 2  # the last run's requests still in flight when wrk stopped finish first
  sql -c "/* api_bench */ SELECT idempotency_key FROM idempotency_keys WHERE id > $rt_id0 AND id <= $rt_id1
    AND response_code = 201 ORDER BY id LIMIT $replay_db_keys" >"$keys" || return 1
  [ -s "$keys" ] || { echo "  api_bench: no finished keys to replay" >&2; return 1; }
  # One request first, outside the count: the token's user may have left the API's cache
  # (TOKEN_CACHE_TTL) since its warm-up.
  status=$(post_rides "http://127.0.0.1:${pgb_ports[1]}" "$replay_key" "$dir/replay-db-first") || return 1
  [ "$status" = 201 ] || { echo "  api_bench: the second pooled API answered $status to a replay" >&2; return 1; }
  t0=$(now)
  read -r q0 x0 < <(pgbouncer_counts) || return 1
  out=$(python3 bench/api_bench/replay_each.py 127.0.0.1 "${pgb_ports[1]}" "$token" "$request_body" "$keys") || return 1
  read -r q1 x1 < <(pgbouncer_counts) || return 1
  t1=$(now)
  sent=$(echo "$out" | sed -n 's/.* sent=\([0-9]*\).*/\1/p')
  created=$(echo "$out" | sed -n 's/.* s201=\([0-9]*\).*/\1/p')
  other=$(echo "$out" | sed -n 's/.* other=\([0-9]*\).*/\1/p')
  rt_replays_sent=$sent
  idle=$(awk -v r="${rt_idle_rate:-0}" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", r * (b - a) }')
  rt_replay=$(ratio "$((q1 - q0 - idle))" "$created" %.2f)
  idle=$(awk -v r="${rt_idle_xact:-0}" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", r * (b - a) }')
  xact_replay=$(ratio "$((x1 - x0 - idle))" "$created" %.2f)
  echo "round trips per replay from the database: ${rt_replay:-not measured} (PgBouncer: $((q1 - q0)) queries," \
    "less the idle rate, / $created replays answered 201 of $sent sent, $other other, first other: $(echo "$out" |
      sed -n 's/.* first_other=\([^ ]*\).*/\1/p'); transactions per replay: ${xact_replay:-?};" \
    "$(awk -v n="$sent" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }') replays/s, one at a time)"
  echo
}
echo
rt_idle || echo "  api_bench: cannot read PgBouncer's SHOW STATS; round trips are not measured" >&2

# New keys through PgBouncer beside the direct API, in alternating pairs at 32 and 128 (which of
# the two goes first alternates too). The first pair at 32 also counts the statements of the API
# through PgBouncer, which must be the same SQL.
pgbouncer_connections=(32 128)
for round in $(seq 1 "$rounds"); do
  for c in "${pgbouncer_connections[@]}"; do
    if [ $((round % 2)) = 1 ]; then order="direct pgbouncer"; else order="pgbouncer direct"; fi
    for which in $order; do
      if [ "$which" = direct ]; then
        wrk_run "API new keys $c direct #$round" new_keys.lua "$c"
      else
        rt_counting=0
        if [ "$round" = 1 ] && [ "$c" = 32 ]; then
          statements_reset
          if rt_new_begin; then rt_counting=1; else echo "  api_bench: cannot read PgBouncer's counts" >&2; fi
        fi
        wrk_run "API new keys $c via PgBouncer #$round" new_keys.lua "$c" "$duration" "$pgb_url"
        if [ "$round" = 1 ] && [ "$c" = 32 ]; then
          statements_read pgbouncer "the API through PgBouncer (prepared statements off)" "$sql_per_new_key_unprepared"
          pgb_per_key=$per_key
          if [ "$rt_counting" = 1 ]; then
            rt_new_end || echo "  api_bench: cannot read PgBouncer's counts after the run" >&2
          fi
        fi
      fi
    done
  done
done

if [ -n "${rt_id1:-}" ]; then
  rt_replays || echo "  api_bench: the replays from the database could not be counted" >&2
fi

# 512 connections through HAProxy in front of both APIs through PgBouncer. The direct API stops
# first, so that every client backend PostgreSQL has in this database (but the sampler's own) is
# one of PgBouncer's server connections.
kill "$api_pid"
wait "$api_pid" 2>/dev/null || true
api_pids=("${pgb_pids[@]}")
haproxy_port=$(pick_port)
haproxy_stats_port=$(pick_port)
while [ "$haproxy_stats_port" = "$haproxy_port" ]; do haproxy_stats_port=$(pick_port); done
echo "starting HAProxy (deploy/haproxy.cfg) in front of the two APIs through PgBouncer..."
API1_ADDRESS=127.0.0.1:${pgb_ports[0]} API2_ADDRESS=127.0.0.1:${pgb_ports[1]} \
  FRONTEND_ADDRESS=127.0.0.1:$haproxy_port STATS_ADDRESS=127.0.0.1:$haproxy_stats_port \
  haproxy -db -f deploy/haproxy.cfg </dev/null >"$dir/haproxy.log" 2>&1 &
haproxy_pid=$!
pids+=("$haproxy_pid")
proxy_pids+=("$haproxy_pid")
haproxy_up() {  # both APIs UP in HAProxy's stats
  curl -fsS --max-time 2 "http://127.0.0.1:$haproxy_stats_port/stats;csv" 2>/dev/null |
    awk -F, '$1 == "apis" && ($2 == "api1" || $2 == "api2") && $18 == "UP" { n++ } END { exit n != 2 }'
}
for _ in $(seq 1 100); do
  if haproxy_up; then break; fi
  kill -0 "$haproxy_pid" 2>/dev/null || { echo "api_bench: HAProxy exited:" >&2; tail -n 20 "$dir/haproxy.log" >&2; exit 1; }
  sleep 0.1
done
haproxy_up || { echo "api_bench: HAProxy does not report both APIs UP after 10 s" >&2; exit 1; }
# PostgreSQL's client backends in the API's database, sampled every 0.5 s during the run (the
# sampler's own session left out). Started after measure's CHECKPOINT, whose session would
# otherwise count.
start_sampler() {
  # shellcheck disable=SC2016
  DATABASE_URL=$DATABASE_URL bash -c 'while :; do
    psql -X -Atq "$DATABASE_URL" -c "/* api_bench */ SELECT count(*) FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = '\''client backend'\'' AND pid <> pg_backend_pid()" || true
    sleep 0.5
  done' >"$dir/pg_backends.txt" 2>&1 &
  sampler_pid=$!
  pids+=("$sampler_pid")
}
haproxy_label="API new keys 512 via HAProxy, 2 APIs, PgBouncer"
before_load=start_sampler
# wrk's own 2 s timeout would count slow answers as socket errors; HAProxy's "timeout server" (30 s)
# is when a request really fails, so wrk waits as long.
wrk_run "$haproxy_label" new_keys.lua 512 "$duration" "http://127.0.0.1:$haproxy_port" --timeout 30s
before_load=""
kill "$sampler_pid"
wait "$sampler_pid" 2>/dev/null || true
pg_backends_max=$(awk '/^[0-9]+$/ { if ($1 > m) m = $1; n++ } END { print m + 0 }' "$dir/pg_backends.txt")
pg_backends_samples=$(grep -c '^[0-9][0-9]*$' "$dir/pg_backends.txt" || true)
# The bound: every client here uses one database and one role, so PgBouncer has one pool, which
# never holds more than default_pool_size + reserve_pool_size server connections; max_db_connections
# (the cap across all pools of the database) is looser, unless set lower.
pool_bound=$((pool_size + reserve_pool_size))
pool_bound_text="default_pool_size $pool_size + reserve_pool_size $reserve_pool_size"
if [ "$max_db_connections" -gt 0 ] && [ "$max_db_connections" -lt "$pool_bound" ]; then
  pool_bound=$max_db_connections
  pool_bound_text="max_db_connections $max_db_connections"
fi
haproxy_socket_errors=$(grep -m1 'Socket errors' "$dir/run-$run_index.out" | sed 's/^ *//' || true)
kill "$haproxy_pid"
wait "$haproxy_pid" 2>/dev/null || true
# What HAProxy saw: an API taken out of rotation (and why), both out, requests it answered itself
# because no API was UP ("<NOSRV>"). Its state changes appear twice in the log (stderr and the
# log line): the "[WARNING]" ones are counted.
haproxy_downs=$(grep -c '^\[WARNING\].* is DOWN' "$dir/haproxy.log" || true)
haproxy_none=$(grep -c '^\[ALERT\].*has no server available' "$dir/haproxy.log" || true)
haproxy_down_reason=$(grep -m1 '^\[WARNING\].* is DOWN' "$dir/haproxy.log" | sed 's/.*reason: //; s/, check duration.*//' || true)
haproxy_nosrv=$(grep -c '<NOSRV>' "$dir/haproxy.log" || true)
if [ "$haproxy_downs" -gt 0 ]; then
  echo "  HAProxy took an API out $haproxy_downs times (first: $haproxy_down_reason), both at once" \
    "$haproxy_none times, and answered $haproxy_nosrv requests itself with no API UP; its first state changes:"
  { grep -E '^\[WARNING\].* is (DOWN|UP)' "$dir/haproxy.log" || true; } | head -n 8 |
    sed 's/^\[WARNING\] *([0-9]*) : /    /; s/, check duration.*//' || true
fi

# --- allocations and system calls per request (the standards' budget: round trips, context
# switches and allocations, counted and printed). Outside the timed runs, on an API started for
# this alone with librocket-rides-alloc-counter.so preloaded (its counter read from a shared file
# before and after each load) and its system calls counted by perf (raw_syscalls:sys_enter, all
# its threads) over the same load: new keys at 32, then replays of the replay key at 32. Without
# the library (a sanitized build) or perf, the figures read "-".
allocs_new_key="" allocs_replay="" syscalls_new_key="" syscalls_replay=""
count_costs() {  # lua: prints "allocations system-calls" per answered request
  local lua=$1 a0 a1 out n perf_pid
  if [ "$(stat -c %s "$dir/alloc-count")" -lt 8 ]; then echo "- -"; return 0; fi  # the library mapped nothing
  a0=$(od -An -t u8 -N 8 "$dir/alloc-count" | tr -d ' ')
  if [ "$have_perf" = 1 ]; then
    perf stat -e raw_syscalls:sys_enter -x, -o "$dir/count-syscalls.csv" -p "$count_pid" >/dev/null 2>&1 &
    perf_pid=$!
    sleep 0.5  # perf attaches to every thread before the load starts
  fi
  out=$(BENCH_TOKEN="$token" BENCH_RUN="count-$RANDOM$RANDOM" BENCH_REPLAY_KEY="$replay_key" \
    wrk -t2 -c32 -d5s -s "bench/api_bench/$lua" "http://127.0.0.1:$count_port" 2>&1 | grep BENCH_RESULT || true)
  if [ "$have_perf" = 1 ]; then
    kill -INT "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
  fi
  a1=$(od -An -t u8 -N 8 "$dir/alloc-count" | tr -d ' ')
  n=$(echo "$out" | sed -n 's/.*s2xx=\([0-9]*\).*/\1/p')
  local syscalls=-
  if [ "$have_perf" = 1 ] && [ -s "$dir/count-syscalls.csv" ]; then
    syscalls=$(ratio "$(awk -F, '/raw_syscalls:sys_enter/ { print $1 }' "$dir/count-syscalls.csv")" "$n" %.1f)
  fi
  echo "$(ratio "$((a1 - a0))" "$n" %.0f) ${syscalls:--}"
}
counter_library=$bin/librocket-rides-alloc-counter.so
have_perf=0
if command -v perf >/dev/null && perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1; then have_perf=1; fi
if [ -f "$counter_library" ]; then
  echo
  echo "counting allocations and system calls per request (an API of its own, preloaded)..."
  count_port=$(pick_port)
  : >"$dir/alloc-count"
  ALLOC_COUNTER_FILE=$dir/alloc-count LD_PRELOAD=$counter_library PORT=$count_port \
    STRIPE_API_BASE=http://127.0.0.1:$mock_port STRIPE_API_KEY=sk_bench API_MAX_IN_FLIGHT_PER_USER=1024 \
    "$bin/rocket-rides-api" >"$dir/api-count.log" 2>&1 &
  count_pid=$!
  pids+=("$count_pid")
  wait_port "$count_port"
  # Warm: pooled connections, prepared statements, the token, the provider's connections.
  BENCH_TOKEN=$token BENCH_RUN=count-warmup-$RANDOM wrk -t2 -c32 -d2s -s bench/api_bench/new_keys.lua \
    "http://127.0.0.1:$count_port" >/dev/null 2>&1 || true
  read -r allocs_new_key syscalls_new_key < <(count_costs new_keys.lua)
  read -r allocs_replay syscalls_replay < <(count_costs replay.lua)
  echo "  new key: ${allocs_new_key:--} allocations, ${syscalls_new_key:--} system calls; replay from memory:" \
    "${allocs_replay:--} allocations, ${syscalls_replay:--} system calls"
  kill "$count_pid" 2>/dev/null || true
  wait "$count_pid" 2>/dev/null || true
fi

# --- the data check: every 201 has its ride, charge (known to the provider, once) and receipt
echo
echo "checking the data..."
sleep 2  # anything still in flight finishes
curl -sf "http://127.0.0.1:$mock_port/_mock/charges" -o "$dir/charges.json"
python3 -c '
import json, sys
for c in json.load(open(sys.argv[1])):
    print("%s\t%s" % (c["id"], c["idempotency_key"]))' "$dir/charges.json" >"$dir/charges.tsv"
check=$(sql -F ' ' <<SQL
CREATE TEMP TABLE mock_charges (id text, payment_key text);
\copy mock_charges FROM '$dir/charges.tsv'
WITH created AS (SELECT * FROM idempotency_keys WHERE response_code = 201),
     jobs AS (SELECT (job_args->0->>'ride_id')::bigint AS ride_id, count(*) AS n FROM staged_jobs
              WHERE job_name = 'send_ride_receipt' GROUP BY 1)
SELECT
  (SELECT count(*) FROM created),
  (SELECT count(*) FROM created k LEFT JOIN rides r ON r.idempotency_key_id = k.id
     WHERE r.id IS NULL OR r.stripe_charge_id IS NULL),
  (SELECT count(stripe_charge_id) - count(DISTINCT stripe_charge_id) FROM rides),
  (SELECT count(*) FROM created k JOIN rides r ON r.idempotency_key_id = k.id
     LEFT JOIN jobs j ON j.ride_id = r.id WHERE coalesce(j.n, 0) <> 1),
  (SELECT count(*) FROM rides r WHERE r.stripe_charge_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM mock_charges c WHERE c.id = r.stripe_charge_id)),
  (SELECT count(*) FROM (SELECT payment_key FROM mock_charges GROUP BY 1 HAVING count(*) > 1) d),
  (SELECT count(*) FROM mock_charges c JOIN idempotency_keys k ON k.payment_idempotency_key = c.payment_key
     WHERE k.response_code = 201 AND NOT EXISTS
       (SELECT 1 FROM rides r WHERE r.idempotency_key_id = k.id AND r.stripe_charge_id = c.id)),
  (SELECT count(*) FROM mock_charges),
  (SELECT count(*) FROM mock_charges c WHERE NOT EXISTS
     (SELECT 1 FROM rides r WHERE r.stripe_charge_id = c.id)),
  (SELECT count(*) FROM idempotency_keys WHERE recovery_point <> 'finished'),
  (SELECT count(*) FROM idempotency_keys WHERE response_code IS DISTINCT FROM 201 AND recovery_point = 'finished');
SQL
)
read -r keys_201 no_charge dup_charge bad_jobs unknown_charge double_charge wrong_charge mock_charges \
  unrecorded unfinished other_finished <<<"$check"
printf '  keys answered 201: %d; mock charges: %d\n' "$keys_201" "$mock_charges"
printf '  201 without a ride or without its charge id: %d\n' "$no_charge"
printf '  charge ids recorded twice: %d\n' "$dup_charge"
printf '  rides of 201 keys without exactly one staged receipt job: %d\n' "$bad_jobs"
printf '  ride charge ids the provider does not know: %d\n' "$unknown_charge"
printf '  payment keys charged more than once: %d\n' "$double_charge"
printf '  charges of a 201 key other than the one on its ride: %d\n' "$wrong_charge"
printf '  (info) charges on no ride: %d; unfinished keys: %d; finished keys not 201: %d\n' \
  "$unrecorded" "$unfinished" "$other_finished"
data_ok=1
if [ "$keys_201" -eq 0 ] || [ $((no_charge + dup_charge + bad_jobs + unknown_charge + double_charge + wrong_charge)) -ne 0 ]; then
  data_ok=0
fi

# --- the table and the verdicts: bench/verdicts.py prints them from the rows and the figures
# this script counted, one "name<TAB>value" a line.
for name in clk rounds duration memory_seconds haproxy_label \
  sql_per_new_key sql_per_new_key_unprepared api_per_key pgb_per_key api_commits_per_key \
  minimum_statements minimum_commits rt_new_key rt_wakeup rt_replay rt_replays_sent xact_replay \
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
