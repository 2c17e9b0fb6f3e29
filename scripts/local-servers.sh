#!/usr/bin/env bash
# Throwaway PostgreSQL and Redis on loopback, in a directory of their own.
#
#   scripts/local-servers.sh start DIR [--fast]   start both; prints export lines for
#                                                 DATABASE_URL and REDIS_URL on stdout
#   scripts/local-servers.sh stop DIR             stop both (safe to call twice)
#   scripts/local-servers.sh env DIR              print the export lines again
#
# --fast turns fsync off (for correctness tests only; benchmarks keep durable commits).
# PG_EXTRA_OPTS (optional) adds postgres options on start, after the defaults, e.g.
#   PG_EXTRA_OPTS="-c shared_preload_libraries=pg_stat_statements"   (values without spaces)
# PostgreSQL refuses to run as root, so as root it runs as the postgres user.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop|env DIR [--fast]" >&2
  exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

port_is_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pick_port() {
  # Below the kernel's ephemeral range, so an outgoing connection cannot take the port between
  # this check and the server's bind.
  local port low=10000 high
  high=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for _ in $(seq 1 100); do
    port=$((low + RANDOM % (high - low)))
    if port_is_free "$port"; then echo "$port"; return 0; fi
  done
  echo "no free port found" >&2
  return 1
}

print_env() {
  # shellcheck disable=SC1091
  . "$dir/ports"
  echo "export DATABASE_URL=postgresql://postgres@127.0.0.1:${PG_PORT}/rocket_rides"
  echo "export REDIS_URL=redis://127.0.0.1:${REDIS_PORT}/0"
  echo "export LOCAL_SERVERS_DIR=$dir"
}

start() {
  local fast=${1:-}
  if [ -z "$pgbin" ]; then echo "PostgreSQL server binaries not found (install postgresql-15)" >&2; exit 1; fi
  if [ -f "$dir/ports" ] && [ -f "$dir/pg/postmaster.pid" ]; then
    echo "servers already running in $dir" >&2
    print_env
    return 0
  fi
  local pg_port redis_port
  pg_port=$(pick_port)
  redis_port=$(pick_port)
  while [ "$redis_port" = "$pg_port" ]; do redis_port=$(pick_port); done
  printf 'PG_PORT=%s\nREDIS_PORT=%s\n' "$pg_port" "$redis_port" >"$dir/ports"

  if [ ! -f "$dir/pg/PG_VERSION" ]; then
    mkdir -p "$dir/pg"
    if [ "$(id -u)" -eq 0 ]; then
      # The postgres user must be able to reach its directory (mktemp -d makes 0700 ones).
      chmod o+x "$dir"
      chown postgres:postgres "$dir/pg"
      chmod 700 "$dir/pg"
    fi
    as_pg "$pgbin/initdb" -D "$dir/pg" -A trust -U postgres --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  local opts="-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1 -c max_connections=300"
  if [ "$fast" = "--fast" ]; then opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"; fi
  if [ -n "${PG_EXTRA_OPTS:-}" ]; then opts="$opts $PG_EXTRA_OPTS"; fi
  as_pg "$pgbin/pg_ctl" -w -t 60 -D "$dir/pg" -l "$dir/pg/server.log" -o "$opts" start >/dev/null ||
    { cat "$dir/pg/server.log" >&2; exit 1; }
  if ! as_pg psql -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = 'rocket_rides'" | grep -q 1; then
    as_pg psql -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -qc "CREATE DATABASE rocket_rides" >/dev/null
  fi

  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir" >/dev/null
  for _ in $(seq 1 100); do
    if redis-cli -p "$redis_port" ping >/dev/null 2>&1; then break; fi
    sleep 0.05
  done
  print_env
}

stop() {
  if [ -f "$dir/pg/postmaster.pid" ] && [ -n "$pgbin" ]; then
    as_pg "$pgbin/pg_ctl" -w -D "$dir/pg" -m fast stop >/dev/null 2>&1 || true
  fi
  if [ -f "$dir/redis.pid" ]; then
    local pid
    pid=$(cat "$dir/redis.pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
      done
    fi
    rm -f "$dir/redis.pid"
  fi
}

case "$cmd" in
  start) start "${3:-}" ;;
  stop) stop ;;
  env) print_env ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
