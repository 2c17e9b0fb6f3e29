# Sourced by bench/api_bench.sh: allocations and system calls per request (the standards' budget:
# round trips, context switches and allocations, counted and printed). Outside the timed runs, on
# an API started for this alone with librocket-rides-alloc-counter.so preloaded (its counter read
# from a shared file before and after each load) and its system calls counted by perf
# (raw_syscalls:sys_enter, all its threads) over the same load: new keys at 32, then replays of
# the replay key at 32. Without the library (a sanitized build) or perf, the figures read "-".
# shellcheck shell=bash
# The parts share their variables: each sets some that the driver or another part reads.
# shellcheck disable=SC2034,SC2154

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

count_allocations() {
  local counter_library=$bin/librocket-rides-alloc-counter.so
  have_perf=0
  if command -v perf >/dev/null && perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1; then have_perf=1; fi
  [ -f "$counter_library" ] || return 0
  echo
  echo "counting allocations and system calls per request (an API of its own, preloaded)..."
  count_port=$(pick_port)
  : >"$dir/alloc-count"
  ALLOC_COUNTER_FILE=$dir/alloc-count LD_PRELOAD=$counter_library start_api "$count_port" "$dir/api-count.log"
  count_pid=$started_pid
  wait_port "$count_port"
  # Warm: pooled connections, prepared statements, the token, the provider's connections.
  BENCH_TOKEN=$token BENCH_RUN=count-warmup-$RANDOM wrk -t2 -c32 -d2s -s bench/api_bench/new_keys.lua \
    "http://127.0.0.1:$count_port" >/dev/null 2>&1 || true
  read -r allocs_new_key syscalls_new_key < <(count_costs new_keys.lua)
  read -r allocs_replay syscalls_replay < <(count_costs replay.lua)
  echo "  new key: ${allocs_new_key:--} allocations, ${syscalls_new_key:--} system calls; replay from memory:" \
    "${allocs_replay:--} allocations, ${syscalls_replay:--} system calls"
  stop_process "$count_pid"
}
