#!/usr/bin/env bash
# Throwaway PostgreSQL and Redis on loopback, in a directory of their own.
#
#   scripts/local-servers.sh start DIR [--fast] [--sentinel] [--archive]
#                                                 start both; prints export lines for
#                                                 DATABASE_URL and REDIS_URL on stdout
#   scripts/local-servers.sh stop DIR             stop everything it started (safe to call twice)
#   scripts/local-servers.sh env DIR              print the export lines again
#   scripts/local-servers.sh postgres-stop DIR    stop PostgreSQL alone (a restore: Redis stays)
#   scripts/local-servers.sh postgres-start DIR   start it again, same port and options
#   scripts/local-servers.sh backup DIR [--full|--diff]    a backup (servers started with --archive)
#   scripts/local-servers.sh backups DIR          the list of backups, and the oldest restore point
#   scripts/local-servers.sh restore DIR --to TIME|--latest [--reconcile ENV_FILE] [--bin-dir BIN]
#                                                 [--postgres-only]
#       PostgreSQL restored to TIME (RFC 3339) or to everything archived, writes closed until a
#       reconciliation pass has run: with --reconcile, at once, as `rocket-rides-api reconcile`
#       (from BIN, default build/bin, else PATH) under the daemons' environment file ENV_FILE
#       (e.g. run.sh's .local/suite.env); without it, the command to run is printed. Then a full
#       backup. --postgres-only stops after closing writes (scripts/cluster.sh reconciles with its
#       own daemons' settings and takes the backup). Clients of the database (the daemons) may
#       keep running: they reconnect, and the API answers writes 503 until reconciliation reopens
#       them. Prints "restored to: ..." and "reconcile since: ..." on stdout.
#
# --fast turns fsync off (for correctness tests only; benchmarks keep durable commits).
# --archive archives WAL through pgBackRest (tools/rrsuite/backup.py; docs/operations.md, "Backups
#   and restore"): its configuration DIR/pgbackrest/pgbackrest.conf (printed as BACKUP_CONFIG),
#   the repository BACKUP_REPO_PATH (default DIR/backup-repo), the stanza created at start.
#   ARCHIVE_TIMEOUT (default 60, seconds) bounds how long a commit waits in a WAL segment that is
#   not full before the segment is archived anyway: what a --latest restore can lose at most on
#   a quiet server.
# --sentinel adds a Redis replica and three sentinels (quorum 2) watching the master as
#   "rocket-rides", and prints REDIS_SENTINELS, REDIS_SENTINEL_MASTER, REDIS_MASTER_PORT and
#   REDIS_REPLICA_PORT too. Failover timings are low, for tests and demos:
#   SENTINEL_DOWN_AFTER_MS (default 1000) and SENTINEL_FAILOVER_TIMEOUT_MS (default 3000).
#   Logs: DIR/redis-replica.log, DIR/sentinel-N/sentinel.log.
# PG_EXTRA_OPTS (optional) adds postgres options on start, after the defaults, e.g.
#   PG_EXTRA_OPTS="-c shared_preload_libraries=pg_stat_statements"   (values without spaces)
# PostgreSQL refuses to run as root, so as root it runs as the postgres user.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop|env|postgres-stop|postgres-start|backup|backups|restore DIR [options]" >&2
  exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
tools=$(cd "$(dirname "$0")/../tools" && pwd)
backup_config=$dir/pgbackrest/pgbackrest.conf

# One server started as tools/rrsuite starts it (servers_cli.py): its command line and its
# readiness wait are written there once.
rrsuite_server() { PYTHONPATH="$tools${PYTHONPATH:+:$PYTHONPATH}" python3 -m rrsuite server "$@"; }
# pgBackRest's configuration and commands as tools/rrsuite writes them (backup.py), in our voice.
rrsuite_backup() {
  RRSUITE_VOICE=local-servers PYTHONPATH="$tools${PYTHONPATH:+:$PYTHONPATH}" python3 -m rrsuite backup "$@"
}

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

database_url() { echo "postgresql://postgres@127.0.0.1:${PG_PORT}/rocket_rides"; }

print_env() {
  # shellcheck disable=SC1091
  . "$dir/ports"
  echo "export DATABASE_URL=$(database_url)"
  echo "export REDIS_URL=redis://127.0.0.1:${REDIS_PORT}/0"
  echo "export LOCAL_SERVERS_DIR=$dir"
  if [ "${ARCHIVE:-}" = 1 ]; then echo "export BACKUP_CONFIG=$backup_config"; fi
  if [ -n "${SENTINEL_PORTS:-}" ]; then
    local list="" port
    for port in $SENTINEL_PORTS; do list="${list:+$list,}127.0.0.1:$port"; done
    echo "export REDIS_SENTINELS=$list"
    echo "export REDIS_SENTINEL_MASTER=rocket-rides"
    echo "export REDIS_MASTER_PORT=$REDIS_PORT"
    echo "export REDIS_REPLICA_PORT=$REPLICA_PORT"
  fi
}

# A replica of the master and three sentinels; returns once every sentinel sees the master, the
# other two sentinels and the replica with its link up, so a failover can happen at once.
start_sentinels() {
  local replica_port=$1 sentinel_ports=$2
  # A directory of its own: a replica writes each full sync's RDB there, which the master must not
  # load as its own dump on a restart.
  mkdir -p "$dir/replica"
  rrsuite_server redis "$replica_port" "$dir/replica" "$dir/redis-replica.pid" "$dir/redis-replica.log" \
    --replica-ready --replicaof "$REDIS_PORT"
  # shellcheck disable=SC2086  # one argument per port
  rrsuite_server sentinels "$dir" "$REDIS_PORT" $sentinel_ports
}

pg_options() {
  # The server's options, from DIR/ports (the same on every start). pg_ctl hands them to a shell:
  # quoted values may hold spaces.
  local opts="-p $PG_PORT -k $dir/pg -c listen_addresses=127.0.0.1 -c max_connections=300"
  if [ "${FAST:-}" = "--fast" ]; then opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"; fi
  if [ "${ARCHIVE:-}" = 1 ]; then
    opts="$opts -c archive_mode=on -c archive_timeout=${ARCHIVE_TIMEOUT:-60}"
    opts="$opts -c \"archive_command=$(rrsuite_backup archive-command "$backup_config")\""
  fi
  if [ -n "${PG_EXTRA_OPTS:-}" ]; then opts="$opts $PG_EXTRA_OPTS"; fi
  echo "$opts"
}

start_postgres() {
  # start_postgres SECONDS: pg_ctl start, waiting up to SECONDS for connections (a restored server
  # takes them once its recovery is consistent).
  rrsuite_server postgres-start "$dir/pg" "$dir/pg/server.log" "$1" "$(pg_options)" || exit 1
}

stop_postgres() {
  if [ -f "$dir/pg/postmaster.pid" ] && [ -n "$pgbin" ]; then
    # A fast stop, and an immediate one if that did not end it in a minute: the callers (stop,
    # and a restore that wipes the data directory next) need the server gone.
    as_pg "$pgbin/pg_ctl" -w -t 60 -D "$dir/pg" -m fast stop >/dev/null 2>&1 ||
      as_pg "$pgbin/pg_ctl" -w -t 30 -D "$dir/pg" -m immediate stop >/dev/null 2>&1 || true
  fi
}

start() {
  local fast="" sentinel="" archive="" arg
  for arg in "$@"; do
    case "$arg" in
      --fast) fast=--fast ;;
      --sentinel) sentinel=yes ;;
      --archive) archive=1 ;;
      *) echo "unknown option $arg" >&2; exit 2 ;;
    esac
  done
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
  printf 'PG_PORT=%s\nREDIS_PORT=%s\nFAST=%s\nARCHIVE=%s\nARCHIVE_TIMEOUT=%s\n' "$pg_port" "$redis_port" "$fast" "$archive" \
    "${ARCHIVE_TIMEOUT:-60}" >"$dir/ports"
  local replica_port="" sentinel_ports="" port
  if [ -n "$sentinel" ]; then
    # Distinct from each other and from the two above.
    local taken=" $pg_port $redis_port "
    while [ "$(echo "$sentinel_ports" | wc -w)" -lt 4 ]; do
      port=$(pick_port)
      case "$taken" in *" $port "*) continue ;; esac
      taken="$taken$port "
      sentinel_ports="$sentinel_ports $port"
    done
    replica_port=$(echo "$sentinel_ports" | awk '{print $1}')
    sentinel_ports=$(echo "$sentinel_ports" | awk '{print $2, $3, $4}')
    printf 'REPLICA_PORT=%s\nSENTINEL_PORTS="%s"\n' "$replica_port" "$sentinel_ports" >>"$dir/ports"
  fi

  if [ ! -f "$dir/pg/PG_VERSION" ]; then
    # As root the postgres user's, its parent reachable (mktemp -d makes 0700 ones).
    rrsuite_server postgres-init "$dir/pg" "$dir/initdb.log" || exit 1
  fi
  if [ -n "$archive" ]; then
    rrsuite_backup write-config "$backup_config" "${BACKUP_REPO_PATH:-$dir/backup-repo}" "$dir/pg" "$pg_port" \
      "$dir/pg" "$dir/pgbackrest" || exit 1
  fi
  PG_PORT=$pg_port FAST=$fast ARCHIVE=$archive ARCHIVE_TIMEOUT=${ARCHIVE_TIMEOUT:-60} start_postgres 60
  if [ -n "$archive" ]; then rrsuite_backup stanza-create "$backup_config" || exit 1; fi
  if ! as_pg psql -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = 'rocket_rides'" | grep -q 1; then
    as_pg psql -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -qc "CREATE DATABASE rocket_rides" >/dev/null
  fi

  rrsuite_server redis "$redis_port" "$dir" "$dir/redis.pid" "$dir/redis.log" --replica-ready
  if [ -n "$sentinel" ]; then REDIS_PORT=$redis_port start_sentinels "$replica_port" "$sentinel_ports"; fi
  print_env
}

stop() {
  stop_postgres
  # Sentinels first, so none starts a failover while the servers stop.
  local pidfile
  for pidfile in "$dir"/sentinel-*/sentinel.pid "$dir/redis-replica.pid" "$dir/redis.pid"; do
    [ -f "$pidfile" ] || continue
    local pid
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -n "$pid" ]; then
      kill "$pid" 2>/dev/null || true
      # Redis saves before it exits, which on a loaded machine took longer than the 5 s this
      # once waited: the caller then removed the directory, the save failed, and a Redis that
      # cannot save refuses to exit (one outlived its test by an hour). 30 s, then SIGKILL.
      for _ in $(seq 1 600); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
      done
      if kill -0 "$pid" 2>/dev/null; then
        echo "local-servers: redis pid $pid did not stop within 30 s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
    rm -f "$pidfile"
  done
}

# The backups and the restore are tools/rrsuite's (local_servers_backup.py, in our voice); it replaces
# this shell, so that a signal to the command reaches the Python restoring.
exec_rrsuite() { PYTHONPATH="$tools${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m rrsuite local-servers "$@"; }

case "$cmd" in
  start) shift 2; start "$@" ;;
  stop) stop ;;
  env) print_env ;;
  postgres-stop) stop_postgres ;;
  postgres-start)
    # shellcheck disable=SC1091
    . "$dir/ports"
    # The log starts anew (a restore wiped the directory it was in).
    start_postgres "${PG_START_TIMEOUT:-600}"
    ;;
  backup | backups | restore) shift 2; exec_rrsuite "$cmd" "$dir" "$@" ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
