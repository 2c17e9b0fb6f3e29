# Sourced by scripts/local-servers.sh and scripts/cluster.sh: pgBackRest for one PostgreSQL
# (the local servers, or one Patroni node): its configuration file, the archive and restore
# commands PostgreSQL runs, backups, the list, the restore of a data directory to a point in time,
# and what a restore does after PostgreSQL is back (close writes, reconcile). One copy, so that
# the plain and the HA shape back up and restore the same way. docs/operations.md, "Backups and
# restore", says what each step is for.
# shellcheck shell=bash

backup_site_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
backup_info=$backup_site_repo/scripts/backup_info.py
# The stanza: pgBackRest's name for this database cluster in the repository.
backup_stanza=rocket-rides

backup_say() {
  # The sourcing script's own voice when it has one (cluster.sh's say).
  if declare -F say >/dev/null; then say "$*"; else echo "$(basename "$0" .sh): $*" >&2; fi
}

backup_as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# backup_write_config FILE REPO PG_PATH PG_PORT SOCKET_DIR WORK_DIR
#   FILE: pgBackRest's configuration for the PostgreSQL in PG_PATH (port PG_PORT, Unix socket in
#   SOCKET_DIR), the repository REPO (created, the postgres user's); spool, log and lock
#   directories under WORK_DIR. Settings (docs/operations.md): BACKUP_RETENTION_FULL (2),
#   BACKUP_RETENTION_DIFF (6), BACKUP_ARCHIVE_QUEUE_MAX (4GiB), BACKUP_COMPRESS_TYPE (lz4),
#   BACKUP_PROCESS_MAX (2).
backup_write_config() {
  local file=$1 repo=$2 pg_path=$3 pg_port=$4 socket_dir=$5 work=$6
  mkdir -p "$repo" "$work/spool" "$work/log" "$work/lock"
  cat >"$file" <<CONF
# Written by $(basename "$0"): pgBackRest for the PostgreSQL in $pg_path.
[global]
# The repository: a local directory here; S3-compatible storage in docs/operations.md.
repo1-path=$repo
# Keep this many full backups (and the WAL they need); older ones expire after each backup.
repo1-retention-full=${BACKUP_RETENTION_FULL:-2}
repo1-retention-diff=${BACKUP_RETENTION_DIFF:-6}
compress-type=${BACKUP_COMPRESS_TYPE:-lz4}
# Files are copied (and synced) by this many processes at once.
process-max=${BACKUP_PROCESS_MAX:-2}
# PostgreSQL's archive_command returns as soon as the segment is queued in the spool; one
# process pushes several segments at once. The queue cap keeps a repository that is down from
# filling pg_wal: past it, segments are dropped (a gap in the archive, told in the log and by
# the archive metrics) instead of PostgreSQL stopping.
archive-async=y
spool-path=$work/spool
archive-push-queue-max=${BACKUP_ARCHIVE_QUEUE_MAX:-4GiB}
archive-timeout=60
# A backup starts with an immediate checkpoint, not a spread one.
start-fast=y
log-path=$work/log
lock-path=$work/lock
log-level-console=warn
log-level-stderr=warn
log-level-file=info

[$backup_stanza]
pg1-path=$pg_path
pg1-port=$pg_port
pg1-socket-path=$socket_dir
pg1-user=postgres
CONF
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres:postgres "$repo" "$work" "$file"; fi
}

backup_archive_command() { echo "pgbackrest --config=$1 --stanza=$backup_stanza archive-push %p"; }
# backup_patroni_restore_command CONFIG PG_BIN_DIR: a Patroni node's restore_command, pgBackRest's
# archive-get except for the history files a crashed leader must not see (deploy/patroni-restore-command).
backup_patroni_restore_command() { echo "$backup_site_repo/deploy/patroni-restore-command $1 $2 %f \"%p\""; }

# backup_pgbackrest CONFIG ARGS...: pgBackRest as the postgres user for this stanza.
backup_pgbackrest() {
  local config=$1
  shift
  backup_as_postgres pgbackrest "--config=$config" "--stanza=$backup_stanza" "$@"
}

backup_stanza_create() {
  backup_pgbackrest "$1" stanza-create >&2 || { backup_say "pgbackrest stanza-create failed"; return 1; }
}

backup_info_json() { backup_pgbackrest "$1" info --output=json; }

# backup_take CONFIG full|diff|incr: one backup; prints its line from the list.
backup_take() {
  local config=$1 type=$2 started
  started=$(date +%s)
  backup_say "taking a $type backup"
  backup_pgbackrest "$config" backup "--type=$type" >&2 || { backup_say "the $type backup failed (its log: $(backup_log_dir "$config"))"; return 1; }
  backup_say "$type backup done in $(($(date +%s) - started)) s"
  backup_info_json "$config" | python3 "$backup_info" list | grep -E '^[0-9]{8}-' | tail -n 1
}

# backup_take_as CONFIG [--full|--diff|--incr]: backup_take with the kind an operator command was
# given (diff when none); an unknown option fails in one line.
backup_take_as() {
  local kind
  case "${2:-}" in
    --full) kind="full" ;;
    --diff | "") kind="diff" ;;
    --incr) kind="incr" ;;
    *) backup_say "backup: unknown option $2 (--full or --diff)"; return 2 ;;
  esac
  backup_take "$1" "$kind"
}

backup_log_dir() { sed -n 's/^log-path=//p' "$1"; }

backup_list() { backup_info_json "$1" | python3 "$backup_info" list; }

# backup_status CONFIG CONNINFO [VERIFY_STATE]: the last good backup, the archiver, pgbackrest
# check, and the last pgbackrest verify's result (read from its state file, not run: a verify
# reads every file of the repository).
backup_status() {
  local config=$1 conninfo=$2 verify_state=${3:-} line check
  backup_info_json "$config" | python3 "$backup_info" status
  line=$(psql -X -At -F ' ' "$conninfo" -c "SELECT archived_count, COALESCE(last_archived_wal, 'none'),
      COALESCE(to_char(last_archived_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), 'never'),
      failed_count, COALESCE(to_char(last_failed_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), 'never')
      FROM pg_stat_archiver" 2>/dev/null) || line=""
  if [ -n "$line" ]; then
    # shellcheck disable=SC2086
    set -- $line
    echo "archive: archived=$1 last=$2 at $3 failed=$4 last_failure=$5"
  else
    echo "archive: PostgreSQL does not answer"
  fi
  # check: the stanza matches PostgreSQL, and a forced WAL switch reaches the repository. Bounded
  # at 10 s (not the configuration's 60): status is polled by scripts and tests while the
  # cluster changes leaders.
  if check=$(backup_pgbackrest "$config" check --archive-timeout=10 2>&1); then
    echo "check: ok (a WAL switch reached the repository)"
  else
    echo "check: FAILED: $(echo "$check" | grep -m1 -E 'ERROR|error' || echo "$check" | head -n 1)"
  fi
  if [ -n "$verify_state" ]; then python3 "$backup_info" verify-status --state "$verify_state"; fi
}

# backup_verify CONFIG STATE: pgbackrest verify over the whole repository (every backup's and
# archived segment's files against their checksums) and no segment missing inside a timeline of
# the archive; one line, the result recorded in STATE for
# `status` and the metrics; status 1 if the repository is damaged.
backup_verify() {
  python3 "$backup_info" verify --stanza "$backup_stanza" --config "$1" --state "$2"
}

# backup_write_metrics CONFIG CONNINFO FILE [VERIFY_STATE]: the node-exporter textfile.
backup_write_metrics() {
  python3 "$backup_info" metrics --stanza "$backup_stanza" --config "$1" --conninfo "$2" --textfile "$3" \
    ${4:+--verify-state "$4"}
}

# backup_target CONFIG TIME: TIME (RFC 3339) as recovery_target_time, or one line and status 1
# when no backup reaches it.
backup_target() { backup_info_json "$1" | python3 "$backup_info" target "$2"; }

# backup_check_restore_target CONFIG TO: before anything stops, with TO (RFC 3339) the target
# as recovery_target_time, with TO empty (--latest) nothing; one line and status 1 when no backup
# reaches TO, or there is no backup at all.
backup_check_restore_target() {
  if [ -n "$2" ]; then
    backup_target "$1" "$2"
  elif ! backup_info_json "$1" | python3 "$backup_info" newest >/dev/null; then
    backup_say "restore: there is no backup to restore from (take one with backup --full)"
    return 1
  fi
}

# backup_flush CONFIG: a WAL switch that returns once the segment is in the repository, so that
# --latest restores every commit made so far.
backup_flush() {
  backup_pgbackrest "$1" check >&2 || { backup_say "could not flush the archive (pgbackrest check failed)"; return 1; }
}

# backup_restore_data CONFIG DATA_DIR [PG_TIME]: wipes DATA_DIR and restores into it, to PG_TIME
# (then promote), or to the end of the archive without it. PostgreSQL must be stopped.
backup_restore_data() {
  local config=$1 data=$2 target=${3:-}
  local -a how=(--type=default)
  if [ -n "$target" ]; then how=(--type=time "--target=$target" --target-action=promote); fi
  local pid
  # Wiping the files of a server still running would leave it writing into the restored ones.
  if pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    backup_say "PostgreSQL (pid $pid) still runs on $data: not wiping it"
    return 1
  fi
  backup_say "wiping $data"
  backup_as_postgres find "$data" -mindepth 1 -delete
  backup_say "pgbackrest restore ${how[*]}"
  backup_pgbackrest "$config" restore --target-timeline=latest "${how[@]}" >&2 ||
    { backup_say "pgbackrest restore failed (its log: $(backup_log_dir "$config"))"; return 1; }
  # A socket's lock file in the data directory (where the local servers keep their socket) is a
  # plain file that the backup copied: it names the old postmaster's pid, and a new postmaster
  # refuses to start while any process has that pid.
  rm -f "$data"/.s.PGSQL.*.lock
}

# backup_wait_promoted CONNINFO SECONDS ALIVE_COMMAND...: until PostgreSQL has replayed to its
# target and promoted; fails at once if ALIVE_COMMAND says it exited (a target past the end of
# the archive ends recovery with a FATAL).
backup_wait_promoted() {
  local conninfo=$1 seconds=$2
  shift 2
  local _ answer
  for _ in $(seq 1 $((seconds * 5))); do
    answer=$(psql -X -At "$conninfo" -c 'SELECT pg_is_in_recovery()' 2>/dev/null || true)
    if [ "$answer" = f ]; then return 0; fi
    if ! "$@"; then backup_say "PostgreSQL exited during recovery"; return 1; fi
    sleep 0.2
  done
  backup_say "PostgreSQL has not finished recovery after $seconds s"
  return 1
}

# backup_after_promote CONNINFO: prints the time of the last transaction replayed (RFC 3339, with
# microseconds; empty if none was), then takes the restore's recovery settings out of
# postgresql.auto.conf: left there, they would apply again the next time this data directory
# recovers (as a standby after a switchover: it would stop at the old target and promote).
backup_after_promote() {
  local conninfo=$1 name
  psql -X -At "$conninfo" -c "SELECT COALESCE(to_char(pg_last_xact_replay_timestamp() AT TIME ZONE 'UTC',
      'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), '')"
  for name in restore_command recovery_target_time recovery_target_action recovery_target_timeline recovery_target; do
    psql -X -q "$conninfo" -c "ALTER SYSTEM RESET $name" >/dev/null
  done
  psql -X -q "$conninfo" -c 'SELECT pg_reload_conf()' >/dev/null
}

# backup_margin_since TIME: TIME less RESTORE_RECONCILE_MARGIN seconds (600), RFC 3339.
backup_margin_since() {
  python3 - "$1" "${RESTORE_RECONCILE_MARGIN:-600}" <<'PY'
import datetime, sys
t = datetime.datetime.fromisoformat(sys.argv[1].replace("Z", "+00:00"))
print((t - datetime.timedelta(seconds=int(sys.argv[2]))).astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
PY
}

# backup_close_writes CONNINFO TIME SINCE: one open write fence (the API answers writes 503 until
# reconciliation has covered [SINCE, now]). A restored schema without the write_fences table (a
# backup older than the release that added it) cannot be fenced: the restore stops there, before
# any daemon serves writes, and says what to do.
backup_close_writes() {
  local conninfo=$1 time=$2 since=$3 exists id
  backup_writes_closed=""
  exists=$(psql -X -At "$conninfo" -c "SELECT to_regclass('write_fences') IS NOT NULL")
  if [ "$exists" != t ]; then
    backup_say "the restored schema has no write_fences table (a backup older than this release): run" \
      "rocket-rides-api migrate, then rocket-rides-api reconcile --since $since, before starting the daemons"
    return 1
  fi
  # -q: without it psql prints the row, then "INSERT 0 1"; piped into `head -n 1`, that second
  # line could meet a closed pipe, and the SIGPIPE (under pipefail) reported a committed fence
  # as failed.
  id=$(psql -X -At -q -v ON_ERROR_STOP=1 "$conninfo" -v reason="restored to $time" -v since="$since" \
    <<<"INSERT INTO write_fences (reason, reconcile_since) VALUES (:'reason', :'since') RETURNING id;") ||
    { backup_say "could not close writes (INSERT INTO write_fences failed)"; return 1; }
  backup_writes_closed=1
  backup_say "writes closed (write_fences id $id, reconcile since $since)"
}

# backup_fence_restored CONFIG CONNINFO TO RESTORED: once the restored PostgreSQL is a primary,
# before any daemon writes: writes closed from the restore point less the margin. The restore
# point is TO (--to), else RESTORED (the last transaction replayed), else the newest backup's end.
# Sets restore_time and restore_since.
backup_fence_restored() {
  local config=$1 conninfo=$2 to=$3 restored=$4
  if [ -n "$to" ]; then restore_time=$to
  elif [ -n "$restored" ]; then restore_time=$restored
  else restore_time=$(backup_info_json "$config" | python3 "$backup_info" newest)
  fi
  restore_since=$(backup_margin_since "$restore_time")
  backup_close_writes "$conninfo" "$restore_time" "$restore_since"
}

# backup_restore_report RESTORED: what a restore prints on stdout when it is done.
backup_restore_report() {
  echo "restored to: $restore_time (last transaction replayed: ${1:-none after the backup})"
  echo "reconcile since: $restore_since"
}

# backup_env_file_variables FILE: the NAME=VALUE lines of a daemons' environment file (as
# scripts/env-file.sh writes it, or the package's /etc/rocket-rides/rocket-rides.env), one pair of
# quotes around a value taken off; comments and blank lines skipped.
backup_env_file_variables() {
  sed -n -E "/^[A-Za-z_][A-Za-z_0-9]*=/{s/^([^=]*)='(.*)'\$/\1=\2/;s/^([^=]*)=\"(.*)\"\$/\1=\2/;p}" "$1"
}

# backup_reconcile API_BINARY SINCE ENV...: the reconciliation pass over [SINCE, now] with the
# daemons' environment ENV (NAME=VALUE...), or the command the operator must run.
backup_reconcile() {
  local api=$1 since=$2 out
  shift 2
  local by_hand="run: rocket-rides-api reconcile --since $since (with the daemons' DATABASE_URL and STRIPE_API_BASE)"
  if [ ! -x "$api" ]; then
    backup_say "reconcile: $api not found; $by_hand"
    return 0
  fi
  local code=0 _
  # Exit 5: another pass (a completer's) holds the lease; it ends within its window's listing.
  for _ in $(seq 1 60); do
    code=0
    out=$(env -i "$@" "$api" reconcile --since "$since" 2>&1) || code=$?
    [ "$code" = 5 ] || break
    sleep 2
  done
  if [ "$code" = 0 ]; then
    backup_say "reconcile: $(echo "$out" | grep -m1 '^matched=' || echo "$out" | tail -n 1)"
    echo "$out" | grep -v '^matched=' | sed 's/^/    /' >&2 || true
  else
    backup_say "reconcile did not run: $(echo "$out" | tail -n 1)"
    if [ -n "${backup_writes_closed:-}" ]; then backup_say "writes stay closed until it has; $by_hand"
    else backup_say "$by_hand"
    fi
  fi
}
