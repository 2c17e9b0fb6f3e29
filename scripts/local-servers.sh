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
shift 2
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tools=$(cd "$(dirname "$0")/../tools" && pwd)

# Every command is tools/rrsuite's (python3 -m rrsuite local-servers: local_servers_cli.py, the
# backups and the restore in local_servers_backup.py, pgBackRest in backup.py); this script is the
# command line the docs and the suites use. rrsuite replaces this shell, so that a signal to the
# command reaches the Python it runs.
# shellcheck source=scripts/python3.sh
. "$(dirname "$0")/python3.sh"
case "$cmd" in
  start | stop | env | postgres-stop | postgres-start | backup | backups | restore)
    PYTHONPATH="$tools${PYTHONPATH:+:$PYTHONPATH}" exec "$python3" -m rrsuite local-servers "$cmd" "$dir" "$@"
    ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
