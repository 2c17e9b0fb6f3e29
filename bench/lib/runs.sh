# Sourced by bench/api_bench.sh: which runs, in which order. Whatever compares two figures runs
# them in alternating pairs (ROUNDS of them, the verdict takes the median pair), so that a drift
# of a shared machine's disk hits both sides of a ratio.
# shellcheck shell=bash
# The parts share their variables: each sets some that the driver or another part reads.
# shellcheck disable=SC2034,SC2154

connections=(8 32 128)
pgbouncer_connections=(32 128)

# pgbench on the new-key SQL, then the API with new keys, at 8/32/128. The API's run at 32 also
# counts its statements per new key; the runs at 32 and at 128 each its commits per new key
# (snapshots of PostgreSQL's counts on both sides, bench/lib/counts.sh); the snapshot before the
# run at 32 also starts the HOT counts over all the API's new-key runs at 32 and 128.
runs_new_keys() {
  local c
  for c in "${connections[@]}"; do pgbench_run "pgbench new-key SQL $c" "$dir/new_key.sql" "$c"; done
  warm_up "$api_url"
  for c in "${connections[@]}"; do
    if [ "$c" = 32 ]; then
      stats_snapshot before32
      statements_reset
    fi
    wrk_run "API new keys $c" new_keys.lua "$c"
    if [ "$c" = 32 ]; then
      statements_read direct "the API straight to PostgreSQL (prepared statements)"
      api_per_key=$per_key
      stats_snapshot after32
      api_commits_read 32 before32 after32
    elif [ "$c" = 128 ]; then
      stats_snapshot after128
      api_commits_read 128 after32 after128
    fi
  done
}

# Side by side: pgbench and the API alternate at 32; so do 32 and 128 ("no collapse at 128").
# pgbench running the minimum SQL joins each round, right after the product's SQL. The article's
# minimum SQL pairs with the API's new keys at 32 and at 128, the article first in odd
# rounds and the API first in even ones, so that neither side always runs second. Afterwards the
# counts over the group: HOT shares and commits (bench/lib/counts.sh).
runs_new_key_rounds() {
  local round c which order
  for round in $(seq 1 "$rounds"); do
    pgbench_run "pgbench new-key SQL 32 #$round" "$dir/new_key.sql" 32
    if [ "$minimum_ok" = 1 ]; then
      if [ "$round" = 1 ]; then
        minimum_counts_begin || echo "  api_bench: cannot read the minimum SQL's counts before its run" >&2
      fi
      if soft pgbench_run "pgbench minimum SQL 32 #$round" "$minimum_sql" 32 prepared && [ "$round" = 1 ]; then
        minimum_counts_end "pgbench minimum SQL 32 #1" ||
          echo "  api_bench: cannot read the minimum SQL's statement and commit counts" >&2
      fi
    fi
    if [ $((round % 2)) = 1 ]; then order="article api"; else order="api article"; fi
    for c in 32 128; do
      for which in $order; do
        if [ "$which" = api ]; then
          wrk_run "API new keys $c #$round" new_keys.lua "$c"
        elif [ "$article_ok" = 1 ]; then
          soft article_run "pgbench article minimum SQL $c #$round" "$c" || true
        fi
      done
    done
  done
  stats_snapshot rounds
  hot_read before32 after128 rounds
}

# Replays of one key, each API run beside nginx answering the same bytes (its CPU in the "api"
# column of its rows) at each connection count, then ROUNDS pairs at 32: nginx's own rate moved by
# 1.4x between single runs on this machine, more than the change a single pair can show.
runs_replays() {
  local status c round
  replay_key=replay-bench-key-$RANDOM$RANDOM-$RANDOM$RANDOM
  status=$(post_rides "$api_url" "$replay_key" "$dir/replay-first")
  [ "$status" = 201 ] || { echo "api_bench: creating the replay key answered $status" >&2; cat "$dir/replay-first.body" >&2; exit 1; }
  nginx_ok=0
  if nginx_start; then
    nginx_ok=1
  else
    echo "api_bench: nginx could not answer with the API's replay bytes; the nginx rows are left out" >&2
  fi
  for c in "${connections[@]}"; do
    wrk_run "API replay $c" replay.lua "$c"
    if [ "$nginx_ok" = 1 ]; then nginx_run "$c" || true; fi
  done
  if [ "$nginx_ok" = 1 ]; then
    for round in $(seq 1 "$rounds"); do
      wrk_run "API replay 32 #$round" replay.lua 32
      nginx_run 32 " #$round" || true
    done
  fi
  if [ -n "$nginx_pid" ]; then stop_process "$nginx_pid"; fi
}
nginx_run() {  # connections [label suffix]
  local saved=("${api_pids[@]}") rc=0
  # shellcheck disable=SC2207
  api_pids=("$nginx_pid" $(pgrep -P "$nginx_pid" || true))
  soft wrk_run "nginx same replay bytes $1${2:-}" replay.lua "$1" "$duration" "http://127.0.0.1:$nginx_port" || rc=$?
  api_pids=("${saved[@]}")
  return "$rc"
}

# Mixed traffic (90 % new keys, 10 % retries), pgbench on the replay SQL, and the long mixed run
# at 128 after which the API's memory is read.
runs_mixed() {
  local c round pgbench_replay_key
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
}

# New keys through PgBouncer beside the direct API, in alternating pairs at 32 and 128 (which of
# the two goes first alternates too). The first pair at 32 also counts the statements of the API
# through PgBouncer, which must be the same SQL; the first pairs at 32 and at 128 its round trips;
# then the replays from the database are counted.
runs_pooled() {
  local round c order which rt_counting
  echo
  rt_idle || echo "  api_bench: cannot read PgBouncer's SHOW STATS; round trips are not measured" >&2
  for round in $(seq 1 "$rounds"); do
    for c in "${pgbouncer_connections[@]}"; do
      if [ $((round % 2)) = 1 ]; then order="direct pgbouncer"; else order="pgbouncer direct"; fi
      for which in $order; do
        if [ "$which" = direct ]; then
          wrk_run "API new keys $c direct #$round" new_keys.lua "$c"
          continue
        fi
        rt_counting=0
        if [ "$round" = 1 ]; then
          if [ "$c" = 32 ]; then statements_reset; fi
          if rt_new_begin "$c"; then rt_counting=1; else echo "  api_bench: cannot read PgBouncer's counts" >&2; fi
        fi
        wrk_run "API new keys $c via PgBouncer #$round" new_keys.lua "$c" "$duration" "$pgb_url"
        if [ "$round" = 1 ] && [ "$c" = 32 ]; then
          statements_read pgbouncer "the API through PgBouncer (prepared statements off)" "$sql_per_new_key_unprepared"
          pgb_per_key=$per_key
        fi
        if [ "$rt_counting" = 1 ]; then
          rt_new_end "$c" || echo "  api_bench: cannot read PgBouncer's counts after the run" >&2
        fi
      done
    done
  done
  if [ -n "${rt_id1:-}" ]; then
    rt_replays || echo "  api_bench: the replays from the database could not be counted" >&2
  fi
}

# 512 connections through HAProxy in front of both APIs through PgBouncer. The direct API stops
# first, so that every client backend PostgreSQL has in this database (but the sampler's own) is
# one of PgBouncer's server connections.
haproxy_label="API new keys 512 via HAProxy, 2 APIs, PgBouncer"
run_haproxy() {
  stop_process "$api_pid"
  api_pids=("${pgb_pids[@]}")
  start_haproxy
  before_load=start_sampler
  # wrk's own 2 s timeout would count slow answers as socket errors; HAProxy's "timeout server"
  # (30 s) is when a request really fails, so wrk waits as long.
  wrk_run "$haproxy_label" new_keys.lua 512 "$duration" "http://127.0.0.1:$haproxy_port" --timeout 30s
  before_load=""
  sampler_read
  haproxy_socket_errors=$(grep -m1 'Socket errors' "$dir/run-$run_index.out" | sed 's/^ *//' || true)
  stop_process "$haproxy_pid"
  haproxy_counts
}
