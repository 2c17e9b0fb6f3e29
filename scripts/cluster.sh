#!/usr/bin/env bash
# The production shape on loopback: PostgreSQL (durable) and Redis, PgBouncer in transaction mode
# in front of PostgreSQL, the stand-in provider, two APIs behind HAProxy, two enqueuers, two
# completers and a reaper, every daemon through PgBouncer with DATABASE_PREPARED_STATEMENTS=off.
# PgBouncer and HAProxy run the files in deploy/ unchanged.
#
#   scripts/cluster.sh start DIR [--bin-dir BIN]   start everything; export lines on stdout
#   scripts/cluster.sh stop DIR                    stop everything (safe to call twice)
#   scripts/cluster.sh env DIR                     print the export lines again
#   scripts/cluster.sh status DIR                  each member: pid or "stopped"; HAProxy's view
#   scripts/cluster.sh start-member DIR NAME       start one member again, as `start` did
#   scripts/cluster.sh stop-member DIR NAME [--kill]   stop one: its graceful signal (daemons
#                                                  TERM, PgBouncer INT, HAProxy USR1) with a
#                                                  bound, then kill -9; or --kill: kill -9 at once
#   scripts/cluster.sh restart DIR NAME            stop-member then start-member
#   scripts/cluster.sh rolling-restart DIR         restart api1 then api2, each only while the
#                                                  other is up behind HAProxy
#
# Members: pgbouncer haproxy stripe-mock api1 api2 enqueuer1 enqueuer2 completer1 completer2
# reaper (PostgreSQL and Redis are scripts/local-servers.sh's, in DIR/servers). An API started
# again is waited for until HAProxy reports it UP; an API stopped, until HAProxy has it out.
#
# Binaries come from --bin-dir, else $ROCKET_RIDES_BIN, else build/bin; nothing is built here.
# Settings for the daemons are taken from the environment of `start` (STRIPE_TIMEOUT,
# SHUTDOWN_DRAIN, COMPLETER_MIN_AGE, MOCK_SEED, ...: see capture_settings) and recorded in
# DIR/app.env, so a member started again later runs with the very same ones. Logs in
# DIR/logs/NAME.log, pid files in DIR/pids/. Progress goes to stderr.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
local_servers=$repo/scripts/local-servers.sh
members=(pgbouncer haproxy stripe-mock api1 api2 enqueuer1 enqueuer2 completer1 completer2 reaper)
app_members=(api1 api2 enqueuer1 enqueuer2 completer1 completer2 reaper)

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

say() { echo "cluster: $*" >&2; }
die() { say "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then usage; fi
shift 2

# --- ports -------------------------------------------------------------------------------------

port_is_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

taken_ports=" "
pick_port() {
  # Below the kernel's ephemeral range (like scripts/local-servers.sh), so that no outgoing
  # connection takes the port between this check and the bind, nor while a member is down.
  local port low=10000 high
  high=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for _ in $(seq 1 200); do
    port=$((low + RANDOM % (high - low)))
    case "$taken_ports" in *" $port "*) continue ;; esac
    if port_is_free "$port"; then
      taken_ports="$taken_ports$port "
      echo "$port"
      return 0
    fi
  done
  die "no free port found"
}

# --- state files -------------------------------------------------------------------------------

load_conf() {
  [ -f "$dir/cluster.conf" ] || die "no cluster in $dir (run: $0 start $dir)"
  # shellcheck disable=SC1091
  . "$dir/cluster.conf"
}

direct_url() { echo "postgresql://postgres@127.0.0.1:${PG_PORT}/rocket_rides"; }
pooled_url() { echo "postgresql://postgres@127.0.0.1:${PGBOUNCER_PORT}/rocket_rides"; }

print_env() {
  load_conf
  local token=""
  [ -f "$dir/token" ] && token=$(cat "$dir/token")
  printf 'export %s=%q\n' \
    API_URL "http://127.0.0.1:${HAPROXY_PORT}" \
    DATABASE_URL "$(pooled_url)" \
    DIRECT_DATABASE_URL "$(direct_url)" \
    REDIS_URL "redis://127.0.0.1:${REDIS_PORT}/0" \
    DATABASE_PREPARED_STATEMENTS off \
    ROCKET_RIDES_TOKEN "$token" \
    API1_ADDRESS "127.0.0.1:${API1_PORT}" \
    API2_ADDRESS "127.0.0.1:${API2_PORT}" \
    HAPROXY_PORT "$HAPROXY_PORT" \
    HAPROXY_STATS_URL "http://127.0.0.1:${HAPROXY_STATS_PORT}/stats" \
    PGBOUNCER_PORT "$PGBOUNCER_PORT" \
    PG_PORT "$PG_PORT" \
    REDIS_PORT "$REDIS_PORT" \
    STRIPE_API_BASE "http://127.0.0.1:${MOCK_PORT}" \
    STRIPE_MOCK_PORT "$MOCK_PORT" \
    CLUSTER_DIR "$dir" \
    LOCAL_SERVERS_DIR "$dir/servers"
}

capture_settings() {
  # The daemons' settings from this environment (names as in .env.example), with the cluster's
  # defaults; the addresses are the cluster's own and always win. One K=V a line: env(1) reads
  # them back, so no quoting and no newlines in values.
  local name value
  {
    echo "DATABASE_URL=$(pooled_url)"
    echo "DATABASE_PREPARED_STATEMENTS=off"
    echo "REDIS_URL=redis://127.0.0.1:${REDIS_PORT}/0"
    echo "STRIPE_API_BASE=http://127.0.0.1:${MOCK_PORT}"
    echo "STRIPE_API_KEY=${STRIPE_API_KEY:-sk_test_rocket_rides_cluster}"
    # At least two health-check intervals (deploy/haproxy.cfg checks every 500 ms, fall 2).
    echo "SHUTDOWN_DRAIN=${SHUTDOWN_DRAIN:-2}"
    while IFS= read -r name; do
      case "$name" in
        DATABASE_URL | DATABASE_PREPARED_STATEMENTS | REDIS_URL | STRIPE_API_BASE | STRIPE_API_KEY | \
          SHUTDOWN_DRAIN | LISTEN_DATABASE_URL) continue ;;
        DATABASE_POOL_SIZE | API_WORKERS | API_IO_THREADS | RESPONSE_CACHE_* | SHUTDOWN_TIMEOUT | \
          TOKEN_CACHE_TTL | STRIPE_TIMEOUT | IDEMPOTENCY_KEY_LOCK_TIMEOUT | COMPLETER_* | ENQUEUER_* | \
          REAPER_* | MOCK_* | ASAN_OPTIONS | UBSAN_OPTIONS | LSAN_OPTIONS | TZ) ;;
        *) continue ;;
      esac
      value=${!name}
      case "$value" in *$'\n'*) die "$name contains a newline" ;; esac
      echo "$name=$value"
    done < <(compgen -e | sort)
  } >"$dir/app.env"
}

# --- processes ---------------------------------------------------------------------------------

pid_file() { echo "$dir/pids/$1.pid"; }

start_time_of() {
  # Field 22 of /proc/PID/stat (after the parenthesised name): when the process started, which
  # tells a reused pid from ours.
  sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20
}

pid_running() {
  # Alive and not a zombie.
  local state
  state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

member_pid() {
  # The member's pid if it is running (the very process we started), else nothing and status 1.
  local file pid started
  file=$(pid_file "$1")
  [ -f "$file" ] || return 1
  read -r pid started <"$file" || return 1
  [ -n "$pid" ] && pid_running "$pid" && [ "$(start_time_of "$pid")" = "$started" ] || return 1
  echo "$pid"
}

record_pid() {
  local started
  started=$(start_time_of "$2") || true
  echo "$2 $started" >"$(pid_file "$1")"
}

binary_of() {
  case "$1" in
    api*) echo "$BIN_DIR/rocket-rides-api" ;;
    enqueuer*) echo "$BIN_DIR/rocket-rides-enqueuer" ;;
    completer*) echo "$BIN_DIR/rocket-rides-completer" ;;
    reaper) echo "$BIN_DIR/rocket-rides-reaper" ;;
    stripe-mock) echo "$BIN_DIR/rocket-rides-stripe-mock" ;;
    *) die "no binary for $1" ;;
  esac
}

base_env() {
  # What every member gets besides its settings: nothing else leaks in from the caller's shell.
  member_env=("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "LANG=C.UTF-8" "HOME=${1:-/}")
}

app_env() {
  base_env /
  local -a lines=()
  mapfile -t lines <"$dir/app.env"
  member_env+=("${lines[@]}")
}

setting() {
  # setting NAME DEFAULT: a daemon setting as recorded in DIR/app.env.
  local line
  line=$(grep -m1 "^$1=" "$dir/app.env" 2>/dev/null || true)
  if [ -n "$line" ]; then echo "${line#*=}"; else echo "$2"; fi
}

launch() {
  # launch NAME USER ARGV...: runs ARGV as USER (or as we are, if USER is empty or we are not
  # root) in a session of its own, with exactly "${member_env[@]}" as its environment and its
  # output appended to DIR/logs/NAME.log; records its pid. setsid, setpriv and env each exec in
  # place (a background job of a script is no process group leader), so $! is the member itself.
  local name=$1 user=$2
  shift 2
  local log=$dir/logs/$name.log
  local -a prefix=(setsid)
  if [ -n "$user" ] && [ "$(id -u)" -eq 0 ]; then
    prefix+=(setpriv "--reuid=$user" "--regid=$user" --init-groups)
  fi
  echo "==== $name started $(date '+%F %T') ====" >>"$log"
  "${prefix[@]}" env -i "${member_env[@]}" "$@" </dev/null >>"$log" 2>&1 &
  record_pid "$name" "$!"
}

log_tail() { tail -n 15 "$dir/logs/$1.log" 2>/dev/null | sed 's/^/    /' >&2 || true; }

wait_http() {
  # wait_http NAME URL SECONDS: until URL answers 2xx; fails at once if NAME has exited.
  local name=$1 url=$2 tries=$(($3 * 10))
  for _ in $(seq 1 "$tries"); do
    if ! member_pid "$name" >/dev/null; then
      say "$name exited at start; the end of logs/$name.log:"
      log_tail "$name"
      return 1
    fi
    if curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  say "$name did not answer $url within $3 s; the end of logs/$name.log:"
  log_tail "$name"
  return 1
}

haproxy_state() {
  # HAProxy's view of an API: UP, DOWN, "UP 1/2" (going down), "DOWN 1/2" (coming up), MAINT.
  curl -fsS --max-time 2 "http://127.0.0.1:${HAPROXY_STATS_PORT}/stats;csv" 2>/dev/null |
    awk -F, -v server="$1" '$1 == "apis" && $2 == server { print $18 }'
}

wait_haproxy_up() {
  local name=$1 seconds=${2:-20}
  for _ in $(seq 1 $((seconds * 10))); do
    if [ "$(haproxy_state "$name")" = UP ]; then return 0; fi
    sleep 0.1
  done
  say "HAProxy does not report $name UP after $seconds s (it says: $(haproxy_state "$name"))"
  return 1
}

wait_haproxy_out() {
  # After an API stopped: until HAProxy no longer reports it UP, so that "UP" seen later is about
  # the new process. With SHUTDOWN_DRAIN it is out before the process exits; at once then.
  local name=$1
  member_pid haproxy >/dev/null || return 0
  for _ in $(seq 1 50); do
    case "$(haproxy_state "$name")" in UP | "UP "*) sleep 0.1 ;; *) return 0 ;; esac
  done
  say "HAProxy still reports $name as $(haproxy_state "$name") 5 s after it stopped"
  return 1
}

stop_member() {
  # stop_member NAME [--kill]: returns once it has exited and, for an API, HAProxy has taken it
  # out of rotation.
  if [ "${2:-}" = --kill ]; then stop_members --kill "$1"; else stop_members "$1"; fi
  case "$1" in api*) wait_haproxy_out "$1" ;; esac
}

wait_alive() {
  # For the daemons without a port: still running after a moment (a bad setting exits at once).
  sleep 0.3
  member_pid "$1" >/dev/null && return 0
  say "$1 exited at start; the end of logs/$1.log:"
  log_tail "$1"
  return 1
}

start_member() {
  local name=$1
  if member_pid "$name" >/dev/null; then
    say "$name already running (pid $(member_pid "$name"))"
    return 0
  fi
  case "$name" in
    pgbouncer)
      base_env /var/lib/postgresql
      launch pgbouncer postgres /usr/sbin/pgbouncer "$dir/pgbouncer/pgbouncer.ini"
      local _
      for _ in $(seq 1 100); do
        if ! member_pid pgbouncer >/dev/null; then
          say "pgbouncer exited at start; the end of logs/pgbouncer.log:"
          log_tail pgbouncer
          return 1
        fi
        if psql -X -q -At -h 127.0.0.1 -p "$PGBOUNCER_PORT" -U postgres -d rocket_rides -c 'SELECT 1' \
          >/dev/null 2>&1; then
          return 0
        fi
        sleep 0.1
      done
      say "pgbouncer does not pass queries to PostgreSQL after 10 s; the end of logs/pgbouncer.log:"
      log_tail pgbouncer
      return 1
      ;;
    haproxy)
      base_env /
      member_env+=("FRONTEND_ADDRESS=127.0.0.1:${HAPROXY_PORT}" "STATS_ADDRESS=127.0.0.1:${HAPROXY_STATS_PORT}"
        "API1_ADDRESS=127.0.0.1:${API1_PORT}" "API2_ADDRESS=127.0.0.1:${API2_PORT}")
      launch haproxy "" /usr/sbin/haproxy -db -f "$repo/deploy/haproxy.cfg"
      wait_http haproxy "http://127.0.0.1:${HAPROXY_STATS_PORT}/healthz" 10
      ;;
    stripe-mock)
      app_env
      member_env+=("PORT=${MOCK_PORT}")
      launch stripe-mock "" "$(binary_of stripe-mock)"
      wait_http stripe-mock "http://127.0.0.1:${MOCK_PORT}/_mock/stats" 20
      ;;
    api1 | api2)
      local port_var=${name^^}_PORT
      app_env
      member_env+=("PORT=${!port_var}")
      launch "$name" "" "$(binary_of "$name")"
      wait_http "$name" "http://127.0.0.1:${!port_var}/healthz" 30
      # Back in service only once HAProxy sends it traffic again.
      if member_pid haproxy >/dev/null; then wait_haproxy_up "$name" 20; fi
      ;;
    enqueuer1 | enqueuer2)
      app_env
      # LISTEN needs a session of its own: straight to PostgreSQL, not through PgBouncer.
      member_env+=("LISTEN_DATABASE_URL=$(direct_url)")
      launch "$name" "" "$(binary_of "$name")"
      wait_alive "$name"
      ;;
    completer1 | completer2 | reaper)
      app_env
      launch "$name" "" "$(binary_of "$name")"
      wait_alive "$name"
      ;;
    *) die "unknown member $name (one of: ${members[*]})" ;;
  esac
}

stop_bound() {
  # Seconds a member gets to stop by itself before kill -9.
  case "$1" in
    api*) echo $(($(setting SHUTDOWN_DRAIN 2) + $(setting SHUTDOWN_TIMEOUT 25) + 5)) ;;
    enqueuer* | completer* | reaper) echo $(($(setting SHUTDOWN_TIMEOUT 25) + 5)) ;;
    haproxy) echo 35 ;;  # hard-stop-after 30s in deploy/haproxy.cfg
    pgbouncer) echo 15 ;;
    *) echo 10 ;;
  esac
}

stop_signal() {
  case "$1" in
    pgbouncer) echo INT ;;  # safe shutdown: waits for transactions in progress (Debian's unit too)
    haproxy) echo USR1 ;;   # soft stop: stops listening, finishes requests in progress
    *) echo TERM ;;         # the daemons: drain, finish in-flight work, exit 0
  esac
}

wait_gone() {
  local pid=$1 tries=$(($2 * 10))
  for _ in $(seq 1 "$tries"); do
    pid_running "$pid" || return 0
    sleep 0.1
  done
  ! pid_running "$pid"
}

stop_members() {
  # stop_members [--kill] NAME...: signals them all, then waits for each within its bound and
  # kills what is left. Never returns while one of them still runs.
  local kill9="" name pid
  if [ "${1:-}" = --kill ]; then kill9=1; shift; fi
  local -A pids=()
  for name in "$@"; do
    if pid=$(member_pid "$name"); then
      pids[$name]=$pid
      if [ -n "$kill9" ]; then kill -KILL "$pid" 2>/dev/null || true
      else kill "-$(stop_signal "$name")" "$pid" 2>/dev/null || true
      fi
    fi
  done
  for name in "$@"; do
    pid=${pids[$name]:-}
    if [ -n "$pid" ] && ! wait_gone "$pid" "$(if [ -n "$kill9" ]; then echo 10; else stop_bound "$name"; fi)"; then
      say "$name (pid $pid) did not stop within $(stop_bound "$name") s: kill -9"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" 10 || say "$name (pid $pid) survives kill -9"
    fi
    rm -f "$(pid_file "$name")"
  done
}

stop_all() {
  if [ -f "$dir/cluster.conf" ]; then
    load_conf
    say "stopping the members"
    # Everything in front of PgBouncer at once (the APIs drain in parallel), then PgBouncer.
    stop_members haproxy "${app_members[@]}" stripe-mock
    stop_members pgbouncer
  fi
  if [ -d "$dir/servers" ]; then
    say "stopping PostgreSQL and Redis"
    "$local_servers" stop "$dir/servers" >&2 || true
  fi
}

# --- start -------------------------------------------------------------------------------------

# shellcheck source=scripts/pgbouncer-site.sh
. "$repo/scripts/pgbouncer-site.sh"

write_pgbouncer_site() {
  # The site file: what is this cluster's; the policy is deploy/pgbouncer.ini, included
  # unchanged. CLUSTER_PGBOUNCER_OVERRIDES (optional, "key = value" lines) is appended for
  # experiments only, e.g. "pool_mode = session" for binaries that cannot yet run unprepared.
  pgbouncer_site_write "$dir/pgbouncer" "$PG_PORT" "$PGBOUNCER_PORT" "scripts/cluster.sh for this cluster" \
    CLUSTER_PGBOUNCER_OVERRIDES
}

on_start_exit() {
  if [ "$1" -ne 0 ]; then
    say "start failed: stopping what was started"
    stop_all
  fi
}

check_pgbouncer_policy() {
  pgbouncer_policy_check "$PGBOUNCER_PORT" "${CLUSTER_PGBOUNCER_OVERRIDES:-}" ||
    die "PgBouncer does not run the policy of deploy/pgbouncer.ini"
}

start_all() {
  local bin_dir=${ROCKET_RIDES_BIN:-$repo/build/bin}
  while [ $# -gt 0 ]; do
    case "$1" in
      --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  [ -d "$bin_dir" ] || die "no binaries in $bin_dir (build first: scripts/build.sh build)"
  bin_dir=$(cd "$bin_dir" && pwd)
  local b
  for b in api enqueuer completer reaper stripe-mock; do
    [ -x "$bin_dir/rocket-rides-$b" ] || die "$bin_dir/rocket-rides-$b missing (build first: scripts/build.sh build)"
  done
  if ! command -v pgbouncer >/dev/null || ! command -v haproxy >/dev/null; then
    die "pgbouncer or haproxy missing (scripts/install-deps.sh installs them)"
  fi

  if [ -f "$dir/cluster.conf" ]; then
    load_conf
    local running=() name
    for name in "${members[@]}"; do
      if member_pid "$name" >/dev/null; then running+=("$name"); fi
    done
    if [ ${#running[@]} -eq ${#members[@]} ]; then
      say "already running in $dir"
      print_env
      return 0
    elif [ ${#running[@]} -gt 0 ]; then
      die "partly running in $dir (${running[*]}): stop it first, or start-member the others"
    fi
  fi

  mkdir -p "$dir/logs" "$dir/pids"
  if [ "$(id -u)" -eq 0 ]; then chmod o+x "$dir"; fi  # the postgres user reaches servers/ and pgbouncer/
  trap 'on_start_exit $?' EXIT

  say "starting PostgreSQL (durable) and Redis in $dir/servers"
  "$local_servers" start "$dir/servers" >/dev/null
  # shellcheck disable=SC1091
  . "$dir/servers/ports"
  taken_ports=" $PG_PORT $REDIS_PORT "
  BIN_DIR=$bin_dir
  PGBOUNCER_PORT=$(pick_port)
  HAPROXY_PORT=$(pick_port)
  HAPROXY_STATS_PORT=$(pick_port)
  MOCK_PORT=$(pick_port)
  API1_PORT=$(pick_port)
  API2_PORT=$(pick_port)
  local var
  for var in BIN_DIR PG_PORT REDIS_PORT PGBOUNCER_PORT HAPROXY_PORT HAPROXY_STATS_PORT MOCK_PORT API1_PORT API2_PORT; do
    printf '%s=%q\n' "$var" "${!var}"
  done >"$dir/cluster.conf"
  capture_settings
  write_pgbouncer_site

  say "starting PgBouncer on $PGBOUNCER_PORT (PostgreSQL on $PG_PORT)"
  start_member pgbouncer
  check_pgbouncer_policy

  say "migrating through PgBouncer"
  app_env
  env -i "${member_env[@]}" "$BIN_DIR/rocket-rides-api" migrate >>"$dir/logs/migrate.log" 2>&1 ||
    { log_tail migrate; die "migrate failed (logs/migrate.log)"; }
  local held
  held=$(psql -X -At -h 127.0.0.1 -p "$PG_PORT" -U postgres -d rocket_rides \
    -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
  [ "$held" = 0 ] || say "WARNING: $held advisory lock(s) still held on PostgreSQL after migrate"

  local email=demo@rocketrides.example token
  if ! token=$(env -i "${member_env[@]}" "$BIN_DIR/rocket-rides-api" user create --email "$email" \
      --stripe-customer cus_demo 2>>"$dir/logs/migrate.log"); then
    token=$(env -i "${member_env[@]}" "$BIN_DIR/rocket-rides-api" user token --email "$email" 2>>"$dir/logs/migrate.log")
  fi
  echo "$token" >"$dir/token"

  say "starting the stand-in provider on $MOCK_PORT"
  start_member stripe-mock
  say "starting api1 on $API1_PORT and api2 on $API2_PORT"
  start_member api1
  start_member api2
  say "starting HAProxy on $HAPROXY_PORT (stats on $HAPROXY_STATS_PORT)"
  start_member haproxy
  wait_haproxy_up api1 20
  wait_haproxy_up api2 20
  curl -fsS -o /dev/null --max-time 5 "http://127.0.0.1:${HAPROXY_PORT}/readyz" ||
    die "GET /readyz through HAProxy failed"
  say "starting enqueuer1, enqueuer2, completer1, completer2, reaper"
  local name
  for name in enqueuer1 enqueuer2 completer1 completer2 reaper; do start_member "$name"; done
  trap - EXIT
  say "up: API at http://127.0.0.1:${HAPROXY_PORT} (logs in $dir/logs)"
  print_env
}

rolling_restart() {
  load_conf
  local api other
  for api in api1 api2; do
    if [ "$api" = api1 ]; then other=api2; else other=api1; fi
    # Never take one down while the other is not serving.
    wait_haproxy_up "$other" 30 || die "$other is not UP behind HAProxy: not restarting $api"
    say "rolling restart: stopping $api (SIGTERM: drains, then exits)"
    stop_member "$api"
    say "rolling restart: starting $api"
    start_member "$api"
  done
  say "rolling restart done"
}

status() {
  load_conf
  local name pid extra
  for name in "${members[@]}"; do
    extra=""
    case "$name" in api*) extra=" haproxy=$(haproxy_state "$name" | tr ' ' _)" ;; esac
    if pid=$(member_pid "$name"); then echo "$name running pid=$pid$extra"; else echo "$name stopped$extra"; fi
  done
}

is_member() {
  local m
  for m in "${members[@]}"; do [ "$m" = "$1" ] && return 0; done
  die "unknown member ${1:-} (one of: ${members[*]})"
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    start_all "$@"
    ;;
  stop | env | status | start-member | stop-member | restart | rolling-restart)
    if [ ! -d "$dir" ]; then
      [ "$cmd" = stop ] && exit 0
      die "no cluster in $dir"
    fi
    dir=$(cd "$dir" && pwd)
    case "$cmd" in
      stop) stop_all ;;
      env) print_env ;;
      status) status ;;
      start-member) is_member "${1:-}"; load_conf; start_member "$1" ;;
      stop-member) is_member "${1:-}"; load_conf; stop_member "$1" "${2:-}" ;;
      restart) is_member "${1:-}"; load_conf; stop_member "$1"; start_member "$1" ;;
      rolling-restart) rolling_restart ;;
    esac
    ;;
  *) usage ;;
esac
