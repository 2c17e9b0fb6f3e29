# Sourced by the shell tests that run PostgreSQL servers archiving through pgBackRest without
# Patroni (tests/ha/crashed_leader_timeline_test.sh, tests/ha/zombie_leader_archive_test.sh):
# a temporary $dir (removed at exit, with every server in it stopped), servers started as
# tools/rrsuite starts them, and pgBackRest configured as it configures it (backup.py). Needs
# pgbackrest (the test exits 77, skipped, without it).
# shellcheck shell=bash
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
command -v pgbackrest >/dev/null || { echo "SKIP: pgbackrest is not installed"; exit 77; }
bin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d "/tmp/rr-$(basename "$0" _test.sh).XXXXXX")
chmod 755 "$dir"
if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$dir"; fi

as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
stop_servers() {
  local pid_file
  for pid_file in "$dir"/*/postmaster.pid; do
    [ -f "$pid_file" ] || continue
    as_pg "$bin/pg_ctl" -D "$(dirname "$pid_file")" -m immediate stop >/dev/null 2>&1 || true
  done
}
remove_servers() {
  stop_servers
  # pgBackRest's asynchronous archiver (archive-push:async, forked by archive_command) outlives an
  # immediate stop and may still be writing its spool under $dir: let it end, then end it.
  local _
  for _ in $(seq 50); do
    pgrep -f -- "--config=$dir/" >/dev/null || break
    sleep 0.1
  done
  pkill -KILL -f -- "--config=$dir/" 2>/dev/null || true
  rm -rf "$dir"
}
trap remove_servers EXIT

# shellcheck source=scripts/python3.sh
. "$repo/scripts/python3.sh"
rrsuite_server() { PYTHONPATH="$repo/tools${PYTHONPATH:+:$PYTHONPATH}" "$python3" -m rrsuite server "$@"; }
rrsuite_backup() {
  RRSUITE_VOICE=$(basename "$0" .sh) PYTHONPATH="$repo/tools${PYTHONPATH:+:$PYTHONPATH}" \
    "$python3" -m rrsuite backup "$@"
}
# The servers listen on Unix sockets in $dir only (listen_addresses ''), so a port is just a socket's
# name there: fixed, distinct numbers cannot clash with anything outside. Ports asked of the kernel
# one after another could (two of three free ports once came back equal and C's start failed).
server_port() { echo $((5440 + $1)); }
sql() { psql -X -At -h "$dir" -p "$1" -U postgres -d postgres -c "$2"; }
# until_sql PORT QUERY WANT: until QUERY answers WANT on PORT (30 s at most; status 1 if never).
until_sql() {
  local port=$1 query=$2 want=$3 _
  for _ in $(seq 1 150); do
    if [ "$(sql "$port" "$query" 2>/dev/null || true)" = "$want" ]; then return 0; fi
    sleep 0.2
  done
  return 1
}
# server_config NAME PORT: $dir/NAME.conf, pgBackRest's configuration of the server in $dir/NAME on
# PORT, over the one repository $dir/repo.
server_config() {
  mkdir -p "$dir/work-$1"
  rrsuite_backup write-config "$dir/$1.conf" "$dir/repo" "$dir/$1" "$2" "$dir" "$dir/work-$1"
}
# archive_to CONFIG: the -c options that archive through CONFIG.
archive_to() { echo "archive_mode=on -c archive_command='$(rrsuite_backup archive-command "$1")'"; }
# until_archived CONFIG FILE: until FILE can be fetched from the repository (30 s at most).
until_archived() {
  local _
  for _ in $(seq 1 150); do
    if as_pg pgbackrest "--config=$1" --stanza=rocket-rides archive-get "$2" "$dir/probe-$2" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  return 1
}
cluster_state() { "$bin/pg_controldata" -D "$1" | sed -n 's/^Database cluster state: *//p'; }
# restore_command_serves NAME FILE: the node's restore command, run in $dir/NAME as PostgreSQL runs
# it, fetches FILE (non-empty) into $dir/work-NAME.
restore_command_serves() {
  (cd "$dir/$1" && as_pg "$repo/deploy/patroni-restore-command" "$dir/$1.conf" "$bin" "$2" \
    "$dir/work-$1/served-$2" 2>/dev/null) && [ -s "$dir/work-$1/served-$2" ]
}
# finish NAME: the test's status; with failures, the last of server NAME's log first.
finish() {
  if [ "${failures:-0}" -gt 0 ]; then
    echo "--- $1's log:" >&2
    tail -n 30 "$dir/$1.log" >&2
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "all checks passed"
}
