# Sourced by bench/api_bench.sh: the measured runs. Each one appends a row to $dir/rows.tsv, the
# file bench/verdicts.py reads:
#   label<TAB>rps p50 p99 2xx 409 5xx other  pg api mock loadgen proxies other-cpu (cores)
#             pg-ticks api-ticks api-switches loadgen-ticks
# (ticks are CPU clock ticks of PostgreSQL, of the APIs and of the load generator over the run,
# for CPU per request; api-switches the APIs' context switches, all threads).
# Reads $dir, $bin, $duration, $token, $api_url, $pgbench_url, sql() (bench/lib/servers.sh).
# shellcheck shell=bash
# The parts share their variables: each sets some that the driver or another part reads.
# shellcheck disable=SC2034,SC2154

# --- the pgbench scripts, generated from the product's calls
# The product sends each phase as one call, "SELECT * FROM fn(...)": with the default
# settings a statement its session prepared once, its arguments as parameters, so pgbench replays
# these scripts with -M prepared, as the API sends them (product_protocol); where the sessions do
# not carry the bound it is the simple query "SET LOCAL statement_timeout = N; SELECT * FROM
# fn('...')", replayed with -M simple. The minimum SQL runs -M prepared, the cheapest way
# PostgreSQL offers; so does the article's, in its own database.
minimum_sql=bench/minimum_sql.sql
article_sql=bench/article_minimum_sql.sql
pgbench_scripts() {
  "$bin/rocket-rides-bench-sql" new-key >"$dir/new_key.sql"
  "$bin/rocket-rides-bench-sql" replay >"$dir/replay.sql"
  sql_per_new_key=$("$bin/rocket-rides-bench-sql" count new-key)
  # The pooled APIs (DATABASE_PREPARED_STATEMENTS=off) send each phase with its SET LOCAL.
  sql_per_new_key_unprepared=$("$bin/rocket-rides-bench-sql" count new-key unprepared)
  product_pgoptions=$("$bin/rocket-rides-bench-sql" pgoptions)
  product_protocol=$("$bin/rocket-rides-bench-sql" protocol)
  pgbench_defines=()
  local line
  while IFS= read -r line; do pgbench_defines+=(-D "$line"); done < <("$bin/rocket-rides-bench-sql" defines)
  pgbench_defines+=(-D "user_id=$pgbench_user" -D lock_token=6f1c2b9e-8a4d-4c3b-9e2f-5d7a1b0c3e4f)

  # The minimum SQL, on the same database and schema as the new-key SQL. One request
  # first, so that a script the schema refuses is found here, once, not in every round.
  minimum_ok=1
  if ! pgbench -n -M prepared -c 1 -t 1 -f "$minimum_sql" "${pgbench_defines[@]}" "$pgbench_url" >"$dir/minimum-check.out" 2>&1; then
    minimum_ok=0
    echo "api_bench: $minimum_sql fails on the product's schema; the pgbench minimum SQL rows are left out:" >&2
    tail -n 5 "$dir/minimum-check.out" >&2
  fi
  # The same for the article's minimum SQL on the article's schema (the floor the product's
  # schema is measured against).
  if [ "$article_ok" = 1 ] && ! pgbench -n -M prepared -c 1 -t 1 -f "$article_sql" "$article_url" \
    >"$dir/article-check.out" 2>&1; then
    article_ok=0
    echo "api_bench: $article_sql fails on bench/article_schema.sql; the article minimum SQL rows are left out:" >&2
    tail -n 5 "$dir/article-check.out" >&2
  fi
}

# --- one measured run: measure LABEL wrk|pgbench COMMAND...
# If set, the command in $before_load runs after the checkpoint, just before the load starts. A
# failed run ends the bench, unless measure_soft=1 (a row the bench can do without): then it says so and
# returns 1, and no row is written.
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

wrk_stats() {  # out: "rps p50 p99 2xx 409 5xx other" from the BENCH_RESULT line of common.lua
  local r
  r=$(grep '^BENCH_RESULT' "$1")
  echo "$r" >"$1.result"
  # shellcheck disable=SC2001
  echo "$r" | sed 's/^BENCH_RESULT //' | awk '{
    for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    printf "%s %s %s %s %s %s %s", v["rps"], v["p50_ms"], v["p99_ms"], v["s2xx"], v["s409"], v["s5xx"], v["sother"] + v["socket_errors"]
  }'
}

pgbench_stats() {  # out log-prefix: the same columns from pgbench's summary and its per-transaction log
  local tps done_tx failed p50 p99
  tps=$(awk '/^tps = / { print $3 }' "$1")
  done_tx=$(awk '/number of transactions actually processed/ { print $NF }' "$1")
  failed=$(awk '/number of failed transactions/ { print $5 }' "$1")
  read -r p50 p99 < <(cat "$2".* | awk '$3 ~ /^[0-9]+$/ { print $3 / 1000 }' | sort -n |
    awk '{ v[NR] = $1 } END { if (NR == 0) { print "- -"; exit }
      i50 = int(NR * 0.50); if (i50 < 1) i50 = 1; i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
      printf "%.3f %.3f\n", v[i50], v[i99] }')
  rm -f "$2".*
  echo "$(printf '%.1f' "$tps") $p50 $p99 $done_tx 0 0 ${failed:-0}"
}

measure() {
  local label=$1 kind=$2 out stats gen
  shift 2
  run_index=$((run_index + 1))
  out=$dir/run-$run_index.out
  sql -c "/* api_bench */ CHECKPOINT"  # every run starts without a checkpoint's backlog
  if [ -n "$before_load" ]; then $before_load; fi
  cpu_begin
  # The wrapper shell waits for the load generator, so its own stat then holds the generator's
  # CPU as cutime+cstime.
  OUT=$out bash -c '"$@" >"$OUT" 2>&1; rc=$?; cat /proc/$$/stat >"$OUT.cpu"; exit $rc' _ "$@" || {
    tail -n 20 "$out" >&2
    measure_failed "$label" "the load generator failed (its output above)" || return 1
  }
  gen=$(waited_child_ticks "$out.cpu")
  cpu_end "$gen"
  if [ "$kind" = wrk ]; then
    if ! grep -q '^BENCH_RESULT' "$out"; then
      cat "$out" >&2
      measure_failed "$label" "no result line (the load generator's output above)" || return 1
    fi
    stats=$(wrk_stats "$out")
  else
    stats=$(pgbench_stats "$out" "$dir/pgbench-log-$run_index")
  fi
  printf '%s\t%s %s %s %s %s %s\n' "$label" "$stats" "$cpu_cores" "$cpu_pg" "$cpu_api" "$cpu_switches" "$gen" \
    >>"$dir/rows.tsv"
  # CPU per request (per pgbench transaction, one whole request, for pgbench): ticks / answers.
  local per_request
  per_request=$(awk -v n="$(echo "$stats" | awk '{ print $4 }')" -v pg="$cpu_pg" -v api="$cpu_api" -v clk="$clk" \
    'BEGIN { if (n > 0) printf "%.0f/%.0f", pg * 1e6 / clk / n, api * 1e6 / clk / n; else print "-/-" }')
  printf '  %-36s %s | cores pg/api/mock/loadgen/proxies/other %s | CPU us per request pg/api %s\n' \
    "$label" "$stats" "$cpu_cores" "$per_request"
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

# The article's minimum SQL as the article wrote it: its own database, -M prepared,
# plain sessions, no variables given (it sets its own).
article_run() {  # label clients
  measure "$1" pgbench env PGOPTIONS= pgbench -n -M prepared -c "$2" -j 2 -T "$duration" -f "$article_sql" \
    -l --log-prefix="$dir/pgbench-log-$((run_index + 1))" "$article_url"
}

wrk_run() {  # label lua connections seconds [url [wrk options...]]
  local label=$1 lua=$2 c=$3 seconds=${4:-$duration} url=${5:-$api_url}
  shift $(($# < 5 ? $# : 5))
  measure "$label" wrk env BENCH_TOKEN="$token" BENCH_RUN="r$((run_index + 1))-$RANDOM$RANDOM" \
    BENCH_REPLAY_KEY="${replay_key:-}" wrk -t2 -c"$c" -d"${seconds}s" --latency "$@" -s "bench/api_bench/$lua" "$url"
}
