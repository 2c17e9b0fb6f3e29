#!/usr/bin/env bash
# What the HA shape costs and how long a failover leaves clients without an answer, measured side
# by side in one run on this machine:
#   1. new keys per second through the production shape with ONE PostgreSQL (scripts/cluster.sh
#      start) and with the Patroni cluster of three and synchronous replication
#      (scripts/cluster.sh start --ha), the same wrk load (bench/api_bench/new_keys.lua) through
#      HAProxy; verdict: HA / single >= 0.7;
#   2. failover unavailability: under a steady trickle of new keys (one every 100 ms), the
#      longest span without a 2xx answer from a fault of the leader (kill -9 of its postgres,
#      kill -9 of its patroni, an operator's switchover) until the cluster is whole again;
#      verdict: median <= 15 s.
# Prints one row per measurement and the verdicts, figures and ratios only; a copy goes to
# bench/results/ha_bench-DATE.md.
#
#   bench/ha_bench.sh [BIN_DIR]          (default build/bin; build first:
#                                         scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo)
# Environment: DURATION (seconds of wrk per shape, default 20), CONNECTIONS (default 32),
# ROUNDS (alternating single / HA pairs, default 2), FAULTS (leader faults, default 6: kill-postgres,
# kill-patroni and switchover in turn).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin_dir=$(cd "${1:-build/bin}" && pwd)
duration=${DURATION:-20}
connections=${CONNECTIONS:-32}
rounds=${ROUNDS:-2}
faults=${FAULTS:-6}

for tool in wrk curl python3 patroni etcd haproxy pgbouncer; do
  command -v "$tool" >/dev/null || { echo "ha_bench: $tool is missing (scripts/install-deps.sh)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/rocket-rides-ha-bench.XXXXXX)
chmod 755 "$work"  # PostgreSQL and Patroni run as the postgres user, under it
mkdir -p bench/results
report=bench/results/ha_bench-$(date -u +%Y%m%d-%H%M%S).md
current=""
cleanup() {
  [ -n "$current" ] && scripts/cluster.sh stop "$current" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

say() { echo "ha_bench: $*" >&2; }
row() { printf '| %s |\n' "$*" | tee -a "$report"; }

start_shape() {  # start_shape NAME [--ha]: starts a cluster in $work/NAME and loads its exports
  current=$work/$1
  shift
  say "starting $(basename "$current") $*"
  local exports
  exports=$(scripts/cluster.sh start "$current" --bin-dir "$bin_dir" "$@") || { say "start failed"; exit 1; }
  eval "$exports"
}

stop_shape() {
  scripts/cluster.sh stop "$current" >/dev/null 2>&1 || true
  current=""
}

new_keys_rate() {  # prints the requests per second of 2xx answers under wrk
  local out
  out=$(BENCH_TOKEN=$ROCKET_RIDES_TOKEN BENCH_RUN="ha-$RANDOM$RANDOM" BENCH_LUA_DIR=bench/api_bench \
    wrk -t2 -c"$connections" -d"${duration}s" -s bench/api_bench/new_keys.lua "$API_URL" 2>&1)
  python3 - "$out" "$duration" <<'PY'
import re, sys
text, seconds = sys.argv[1], float(sys.argv[2])
m = re.search(r"BENCH_RESULT .*", text)
fields = dict(kv.split("=", 1) for kv in m.group(0).split()[1:]) if m else {}
print("%.0f" % (int(fields.get("s2xx", 0)) / float(fields.get("seconds", seconds))))
PY
}

# --- 1. throughput, single node against the HA cluster, alternating --------------------------
{
  echo "# ha_bench $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores"
  echo
  echo "| measurement | figure |"
  echo "| --- | --- |"
} >"$report"
single=()
ha=()
for round in $(seq 1 "$rounds"); do
  start_shape "single-$round"
  single+=("$(new_keys_rate)")
  row "single PostgreSQL, new keys/s at $connections, round $round | ${single[-1]}"
  stop_shape
  start_shape "ha-$round" --ha
  ha+=("$(new_keys_rate)")
  row "Patroni x3, synchronous, new keys/s at $connections, round $round | ${ha[-1]}"
  if [ "$round" -lt "$rounds" ]; then stop_shape; fi
done

# --- 2. failover unavailability on the last HA cluster -------------------------------------
probe_log=$work/probe.log
python3 - "$API_URL" "$ROCKET_RIDES_TOKEN" "$probe_log" <<'PY' &
# A steady client: a new key every 100 ms; per request a line: sent, answered, status.
import sys, time, uuid, urllib.request, urllib.error
url, token, path = sys.argv[1], sys.argv[2], sys.argv[3]
body = b"origin_lat=37.7749&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712"
with open(path, "a", buffering=1) as log:
    while True:
        request = urllib.request.Request(url + "/rides", data=body, method="POST", headers={
            "Authorization": "Bearer " + token, "Idempotency-Key": str(uuid.uuid4()),
            "Content-Type": "application/x-www-form-urlencoded"})
        sent = time.time()
        try:
            status = urllib.request.urlopen(request, timeout=3).status
        except urllib.error.HTTPError as error:
            status = error.code
        except Exception:
            status = 0
        log.write("%.3f %.3f %d\n" % (sent, time.time(), status))
        time.sleep(0.1)
PY
probe_pid=$!
trap 'kill $probe_pid 2>/dev/null || true; cleanup' EXIT INT TERM

healthy() {  # a leader, a synchronous standby named, and both standbys streaming
  local status
  status=$(scripts/cluster.sh status "$current" 2>/dev/null) || return 1
  grep -q "^leader: n" <<<"$status" && grep -q "role=sync_standby" <<<"$status" &&
    [ "$(grep -c "replication=streaming" <<<"$status")" -ge 2 ]
}
wait_healthy() {  # `status` itself takes seconds (it asks every node), so the bound is a clock
  local deadline=$((SECONDS + 180))
  while [ $SECONDS -lt $deadline ]; do healthy && return 0; sleep 1; done
  say "the cluster did not become healthy again within 180 s:"
  scripts/cluster.sh status "$current" | grep -E "^(leader|n[0-9]) " >&2 || true
  return 1
}

unavailable=()
kinds=(kill-postgres kill-patroni switchover)
wait_healthy
for i in $(seq 0 $((faults - 1))); do
  kind=${kinds[$((i % ${#kinds[@]}))]}
  leader=$(scripts/cluster.sh leader "$current")
  sleep 2
  # The clock starts when the fault has happened: right after a kill (the script spends a moment
  # finding the process first), before an operator's switchover (which returns once it is over).
  case "$kind" in
    kill-postgres)
      scripts/cluster.sh kill-postgres "$current" "$leader"
      at=$(date +%s.%N)
      ;;
    kill-patroni)
      scripts/cluster.sh stop-member "$current" "patroni${leader#n}" --kill
      at=$(date +%s.%N)
      ;;
    switchover)
      at=$(date +%s.%N)
      scripts/cluster.sh switchover "$current" >/dev/null
      ;;
  esac
  # Unavailability: the longest span without a 2xx answer from the fault until the cluster is
  # whole again. Backends of a killed postmaster may still answer a request or two before they
  # notice, so "the first 2xx after the kill" would measure those stragglers, not the outage.
  if [ "$kind" = kill-patroni ]; then
    # Patroni comes back once its lock has moved (a new leader serving), as an operator would.
    for _ in $(seq 1 300); do
      [ "$(scripts/cluster.sh leader "$current" 2>/dev/null)" != "$leader" ] && break
      sleep 0.2
    done
    scripts/cluster.sh start-member "$current" "patroni${leader#n}" >/dev/null
  fi
  wait_healthy
  sleep 3
  seconds=$(python3 - "$probe_log" "$at" <<'PY'
import sys, time
at, now = float(sys.argv[2]), time.time()
answers = sorted(float(answered) for sent, answered, status in (line.split() for line in open(sys.argv[1]))
                 if 200 <= int(status) < 300 and at < float(answered) <= now)
points = [at] + answers
print("%.1f" % max(b - a for a, b in zip(points, points[1:] + [now])))
PY
)
  unavailable+=("$seconds")
  row "$kind of leader $leader -> $(scripts/cluster.sh leader "$current" || echo none): longest span without a 2xx, seconds | $seconds"
done
kill $probe_pid 2>/dev/null || true

python3 - "${single[*]}" "${ha[*]}" "${unavailable[*]}" <<'PY' | tee -a "$report"
import statistics, sys
single = [float(x) for x in sys.argv[1].split()]
ha = [float(x) for x in sys.argv[2].split()]
gaps = [float(x) for x in sys.argv[3].split()]
ratio = statistics.median(ha) / statistics.median(single)
median_gap = statistics.median(gaps)
print()
print("| verdict | figure | target | |")
print("| --- | --- | --- | --- |")
print("| HA / single new keys per second (medians %.0f / %.0f) | %.3f | >= 0.7 | %s |" % (
    statistics.median(ha), statistics.median(single), ratio, "PASS" if ratio >= 0.7 else "FAIL"))
print("| failover unavailability, median of %d (max %.1f) | %.1f s | <= 15 s | %s |" % (
    len(gaps), max(gaps), median_gap, "PASS" if median_gap <= 15 else "FAIL"))
PY
say "report: $report"
