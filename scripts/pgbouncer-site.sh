# Sourced by scripts/cluster.sh and bench/api_bench.sh: the site file of a loopback PgBouncer in
# front of a local PostgreSQL, running the pooling policy deploy/pgbouncer.ini unchanged, and the
# check that this policy is the one in force. One copy, so that the cluster and the benchmark
# cannot drift apart in how they include the deploy file.
# shellcheck shell=bash

pgbouncer_site_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

pgbouncer_site_say() { echo "$(basename "$0" .sh): $*" >&2; }

# pgbouncer_site_write DIR PG_PORT PGBOUNCER_PORT WRITER [OVERRIDES_VAR]
#   Writes DIR/pgbouncer.ini (the site file) and DIR/userlist.txt for database rocket_rides on
#   127.0.0.1:PG_PORT, PgBouncer listening on 127.0.0.1:PGBOUNCER_PORT with its Unix socket in
#   DIR. WRITER is named in the file's first comment. OVERRIDES_VAR names a variable whose
#   "key = value" lines (if any) are appended after the policy: experiments only. When root,
#   DIR becomes the postgres user's (PgBouncer refuses to run as root: start it as postgres).
#   Returns non-zero, with a message on stderr, if it cannot.
pgbouncer_site_write() {
  local pgb=$1 server_port=$2 listen_port=$3 writer=$4 overrides_var=${5:-}
  local overrides=""
  if [ -n "$overrides_var" ]; then overrides=${!overrides_var:-}; fi
  local policy=$pgbouncer_site_repo/deploy/pgbouncer.ini
  mkdir -p "$pgb" || return 1
  # The site file: what is this site's; the policy is deploy/pgbouncer.ini, included unchanged.
  {
    echo "; Written by $writer only. The pooling policy is the deploy"
    echo "; file, included right under the one [pgbouncer] header (a second header would reset it)."
    echo "[databases]"
    echo "rocket_rides = host=127.0.0.1 port=${server_port} dbname=rocket_rides"
    echo "[pgbouncer]"
    echo "%include $policy"
    echo "listen_addr = 127.0.0.1"
    echo "listen_port = ${listen_port}"
    echo "unix_socket_dir = $pgb"
    echo "; Loopback only: production uses scram-sha-256 (see the deploy file's header)."
    echo "auth_type = trust"
    echo "auth_file = $pgb/userlist.txt"
    echo "admin_users = postgres"
    echo "; Logs go to stderr, which the script that starts PgBouncer sends to a log file."
    echo "logfile ="
    echo "pidfile ="
    if [ -n "$overrides" ]; then
      echo "; $overrides_var (an experiment, not the deployed policy):"
      echo "$overrides"
    fi
  } >"$pgb/pgbouncer.ini" || return 1
  echo '"postgres" ""' >"$pgb/userlist.txt" || return 1
  if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres:postgres "$pgb" || return 1
    if ! runuser -u postgres -- test -r "$policy"; then
      pgbouncer_site_say "the postgres user cannot read $policy (PgBouncer runs as postgres)"
      return 1
    fi
  fi
}

# pgbouncer_policy_check PGBOUNCER_PORT [OVERRIDES]
#   Every key deploy/pgbouncer.ini sets must be in force (SHOW CONFIG on the admin console),
#   unless OVERRIDES ("key = value" lines) sets it: an inclusion that goes wrong (a second
#   [pgbouncer] header) fails silently. Returns non-zero, saying what differs on stderr, if not.
pgbouncer_policy_check() {
  local port=$1 overrides=${2:-}
  local key value actual bad=0
  local shown
  if ! shown=$(psql -X -At -h 127.0.0.1 -p "$port" -U postgres -d pgbouncer -c 'SHOW CONFIG'); then
    pgbouncer_site_say "cannot read SHOW CONFIG from PgBouncer"
    return 1
  fi
  while IFS='=' read -r key value; do
    key=${key//[[:space:]]/}
    value=$(echo "$value" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
    if printf '%s\n' "$overrides" | grep -q "^[[:space:]]*${key}[[:space:]]*="; then continue; fi
    actual=$(printf '%s\n' "$shown" | awk -F'|' -v k="$key" '$1 == k { print $2 }')
    if [ "$actual" != "$value" ]; then
      pgbouncer_site_say "PgBouncer runs $key = '$actual', deploy/pgbouncer.ini says '$value'"
      bad=1
    fi
  done < <(grep -E '^[a-z_]+[[:space:]]*=' "$pgbouncer_site_repo/deploy/pgbouncer.ini")
  [ "$bad" = 0 ]
}
