# Sourced by bench/api_bench.sh: CPU accounting from /proc, in clock ticks (utime+stime, plus
# cutime+cstime of reaped children), read before and after each run, so that a run's CPU splits
# into PostgreSQL (with its exited backends), the APIs, the provider, the load generator, the
# proxies and the rest of the machine. Reads $dir, $mock_pid and now() (bench/lib/servers.sh).
# shellcheck shell=bash
# The parts share their variables: each sets some that the driver or another part reads.
# shellcheck disable=SC2034,SC2154

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

waited_child_ticks() {  # stat-file: cutime+cstime in a copy of /proc/PID/stat (what PID waited for)
  awk '{ sub(/^.*\) /, ""); print $14 + $15 }' "$1"
}

# Whose CPU a run's columns show: the "api" column is every process in api_pids (every API the
# bench runs, an idle one costs nothing; nginx in its own rows), "proxies" is proxy_pids
# (PgBouncer and HAProxy once started). cpu_begin and cpu_end bracket a run; cpu_end sets
# cpu_cores ("pg api mock loadgen proxies other" in cores), cpu_pg, cpu_api and cpu_switches
# (ticks and context switches over the run). The load generator's ticks are given to cpu_end,
# read from its waiting shell, since it is gone when the run ends.
api_pids=()
proxy_pids=()
cpu_counters() {  # "postgres-ticks api-ticks api-switches mock-ticks proxy-ticks" now
  echo "$(postgres_ticks) $(sum_ticks "${api_pids[@]}") $(context_switches "${api_pids[@]}")" \
    "$(ticks_of "$mock_pid") $(sum_ticks "${proxy_pids[@]}")"
}
# Read in nested order: the machine's window encloses the processes' and theirs the clock's, so
# that "other" (the machine less the processes) is not pushed below zero by the time between reads.
cpu_begin() {
  cpu_all0=$(machine_ticks)
  read -r cpu_pg0 cpu_api0 cpu_switches0 cpu_mock0 cpu_proxy0 < <(cpu_counters)
  cpu_t0=$(now)
}
cpu_end() {  # loadgen-ticks
  local t1 pg1 api1 switches1 mock1 proxy1 all1
  t1=$(now)
  read -r pg1 api1 switches1 mock1 proxy1 < <(cpu_counters)
  all1=$(machine_ticks)
  cpu_pg=$((pg1 - cpu_pg0))
  cpu_api=$((api1 - cpu_api0))
  cpu_switches=$((switches1 - cpu_switches0))
  cpu_cores=$(awk -v clk="$clk" -v wall="$(echo "$t1 - $cpu_t0" | bc -l)" -v pg="$cpu_pg" -v api="$cpu_api" \
    -v mock=$((mock1 - cpu_mock0)) -v gen="$1" -v proxy=$((proxy1 - cpu_proxy0)) -v all=$((all1 - cpu_all0)) \
    'BEGIN { other = all - pg - api - mock - gen - proxy; if (other < 0) other = 0
      printf "%.2f %.2f %.2f %.2f %.2f %.2f", pg / clk / wall, api / clk / wall, mock / clk / wall, gen / clk / wall,
        proxy / clk / wall, other / clk / wall }')
}
