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
# Backups (both shapes; docs/operations.md, "Backups and restore"): PostgreSQL archives its WAL
# through pgBackRest from the start (plain: DIR/servers/pgbackrest/pgbackrest.conf; HA: one
# configuration per node, DIR/patroni/nN/pgbackrest.conf, archiving from whichever node leads)
# into one repository, BACKUP_REPO_PATH (default DIR/servers/backup-repo, HA DIR/backup-repo).
#   scripts/cluster.sh backup DIR [--full|--diff]  a backup (default --diff: a full one if none)
#   scripts/cluster.sh backups DIR                 the backups and the oldest restore point
#   scripts/cluster.sh restore DIR --to TIME       point-in-time restore (TIME in RFC 3339, e.g.
#                                                  2026-11-27T12:00:00Z), or --latest: everything
#                                                  archived. Stops the daemons and PgBouncer,
#                                                  restores, closes writes (write_fences), starts
#                                                  them again, runs the reconciliation pass (or
#                                                  says to), then takes a full backup
#   scripts/cluster.sh verify DIR                  pgbackrest verify of the whole repository
#                                                  and a look for holes in the archive (exit 1
#                                                  if damaged); the result is kept in
#                                                  DIR/backup-verify.json for status and metrics
#   scripts/cluster.sh backup-metrics DIR FILE     the backup and archive metrics as a
#                                                  node-exporter textfile
# RESTORE_RECONCILE_MARGIN (seconds, default 600): reconciliation starts this long before the
# restore point. `status` adds the last good backup, the archiver, `pgbackrest check` and the
# last verify's result.
#
# Members: pgbouncer haproxy stripe-mock api1 api2 enqueuer1 enqueuer2 completer1 completer2
# reaper (PostgreSQL and Redis are scripts/local-servers.sh's, in DIR/servers). An API started
# again is waited for until HAProxy reports it UP; an API stopped, until HAProxy has it out.
#
# The HA shape (docs/high-availability.md): PostgreSQL is three Patroni nodes n1 n2 n3 (a leader,
# a synchronous standby, a standby) over three etcd members; HAProxy also listens on a PostgreSQL
# port that follows the leader (deploy/haproxy-postgres.cfg) and PgBouncer and the enqueuers'
# LISTEN go through it; Redis is started alone in DIR/servers.
#
#   scripts/cluster.sh start DIR --ha [--async] [--netns PREFIX] [--bin-dir BIN]
#       --async    synchronous_mode false (asynchronous standbys: for a comparison run only)
#       --netns P  each node's etcd, Patroni and PostgreSQL in a network namespace Pn1..Pn3 of
#                  its own, on 10.213.X.0/24 (X from P) through veths to a bridge Pbr here;
#                  everything else on this namespace's loopback. Refuses to run in the
#                  machine's initial namespace: run it inside one you made.
#   scripts/cluster.sh leader DIR                  the leader's name (n1..n3), or exit 1 if none
#   scripts/cluster.sh status DIR                  as above, plus "leader: nX" (or "leader: none")
#                                                  and a line per node: role, state, lag,
#                                                  replication as the leader sees it, HAProxy's view
#   scripts/cluster.sh switchover DIR [--candidate nX]   planned: the leader hands over
#   scripts/cluster.sh failover DIR [--candidate nX]     forced: promote a standby now
#                                                  (default candidate: the synchronous standby);
#                                                  both wait until the new leader serves through
#                                                  HAProxy and print "old leader: nX", "new leader: nY"
#   scripts/cluster.sh kill-postgres DIR nX        kill -9 of that node's postmaster
#   scripts/cluster.sh partition DIR nX            (--netns) cut nX off from everything
#   scripts/cluster.sh heal DIR nX                 (--netns) connect it again
# HA members: etcd1 etcd2 etcd3 patroni1 patroni2 patroni3 pgbouncer haproxy stripe-mock api1 api2
# enqueuer1 enqueuer2 completer1 completer2 reaper1 reaper2. stop-member patroniN --kill is a
# kill -9 of patroni alone: its PostgreSQL keeps running, as it would; start-member patroniN
# starts patroni again, which demotes (pg_rewind) or rejoins. `stop` also removes the namespaces
# and links it made. Node N's files: DIR/patroni/nN.yml, DIR/patroni/nN/data, DIR/etcd/etcdN.yml.
#
# Binaries come from --bin-dir, else $ROCKET_RIDES_BIN, else build/bin; nothing is built here.
# Settings for the daemons are taken from the environment of `start` (STRIPE_TIMEOUT,
# SHUTDOWN_DRAIN, COMPLETER_MIN_AGE, MOCK_SEED, PROVIDER_KEY_SECRET (else 32 random bytes in
# hex), ...: see tools/rrsuite/cluster_steps.py) and recorded in
# DIR/app.env, so a member started again later runs with the very same ones. Logs in
# DIR/logs/NAME.log, pid files in DIR/pids/. Progress goes to stderr.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
local_servers=$repo/scripts/local-servers.sh
app_members=(api1 api2 enqueuer1 enqueuer2 completer1 completer2 reaper)


usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

say() {
  # During a restore each line says how far in it is: the operator sees which step takes long.
  if [ -n "${say_clock:-}" ]; then echo "cluster: [+$((SECONDS - say_clock)) s] $*" >&2; else echo "cluster: $*" >&2; fi
}
die() { say "$*"; exit 1; }

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then usage; fi
shift 2

# --- tools/rrsuite ------------------------------------------------------------------------------
# Both shapes' start and stop, every member (its command line, user, environment, its node's
# network namespace, its readiness, its graceful stop), the HA shape's leader, waits, failover,
# switchover and partitions, and `status` but for its backup lines are tools/rrsuite's
# (cluster_cli.py lists them): each server's start-up written once outside C++. What stays here
# is backups and restore, which drive pgBackRest through scripts/backup-site.sh.

rrsuite() {
  # rrsuite COMMAND DIR ARGS...: python3 -m rrsuite cluster COMMAND DIR ARGS... During a restore
  # its lines say how far in it is, as ours do.
  local since=""
  if [ -n "${say_clock:-}" ]; then since=$(($(date +%s) - (SECONDS - say_clock))); fi
  RRSUITE_SAY_SINCE=$since RRSUITE_CLUSTER_SCRIPT=$0 PYTHONPATH="$repo/tools${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m rrsuite cluster "$@"
}

# One server started as tools/rrsuite starts it (servers_cli.py).
rrsuite_server() { PYTHONPATH="$repo/tools${PYTHONPATH:+:$PYTHONPATH}" python3 -m rrsuite server "$@"; }

# The commands that are tools/rrsuite's alone: it replaces this shell, so that a signal to the
# command (a test's timeout, ^C) reaches the Python that stops what a start started.
exec_rrsuite() {
  RRSUITE_CLUSTER_SCRIPT=$0 PYTHONPATH="$repo/tools${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m rrsuite cluster "$@"
}

load_conf() {
  [ -f "$dir/cluster.conf" ] || die "no cluster in $dir (run: $0 start $dir)"
  # shellcheck disable=SC1091
  . "$dir/cluster.conf"
  if [ "${HA:-}" = 1 ]; then
    app_members=(api1 api2 enqueuer1 enqueuer2 completer1 completer2 reaper1 reaper2)
  fi
}

node_var() {
  # node_var N NAME: the value of NODEN_NAME from cluster.conf.
  local var=NODE$1_$2
  echo "${!var}"
}

as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

app_env() {
  # The daemons' environment (the restore's reconciliation pass runs with it): their settings
  # from DIR/app.env, and nothing else from the caller's shell.
  member_env=("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "LANG=C.UTF-8" "HOME=/")
  local -a lines=()
  mapfile -t lines <"$dir/app.env"
  member_env+=("${lines[@]}")
}

log_tail() { tail -n 15 "$dir/logs/$1.log" 2>/dev/null | sed 's/^/    /' >&2 || true; }

start_member() { rrsuite start-member "$dir" "$1"; }

# stop_members [--kill] NAME...: signals them all (each its graceful signal, or kill -9), then waits
# for each within its bound and kills what is left. Never returns while one of them still runs.
stop_members() { rrsuite stop-members "$dir" "$@"; }

leader_name() { rrsuite leader "$dir"; }

# --- backups and restore (scripts/backup-site.sh) -------------------------------------------

# shellcheck source=scripts/backup-site.sh
. "$repo/scripts/backup-site.sh"

backup_repo_path() {
  if [ "${HA:-}" = 1 ]; then echo "${BACKUP_REPO_PATH:-$dir/backup-repo}"; else echo "${BACKUP_REPO_PATH:-$dir/servers/backup-repo}"; fi
}

node_backup_config() { echo "$dir/patroni/n$1/pgbackrest.conf"; }

backup_verify_state() { echo "$dir/backup-verify.json"; }

backup_config_here() {
  # The configuration of the PostgreSQL that archives now: the local servers', or the leader's.
  if [ "${HA:-}" = 1 ]; then
    local leader
    leader=$(leader_name) || { say "no leader: nothing to back up from"; return 1; }
    node_backup_config "${leader#n}"
  else
    [ -f "$dir/servers/pgbackrest/pgbackrest.conf" ] || { say "PostgreSQL here does not archive"; return 1; }
    echo "$dir/servers/pgbackrest/pgbackrest.conf"
  fi
}

backup_repo_config() {
  # A configuration that reads the repository, leader or not (every node shares it).
  if [ "${HA:-}" = 1 ]; then node_backup_config 1; else backup_config_here; fi
}

node_conninfo() {
  # Through the Unix socket: it works from here even when the node is in a namespace of its own.
  echo "host=$dir/patroni/n$1 port=$(node_var "$1" PG_PORT) user=postgres dbname=${2:-rocket_rides} connect_timeout=5"
}

backup_conninfo_here() {
  if [ "${HA:-}" = 1 ]; then
    local leader
    leader=$(leader_name) || return 1
    node_conninfo "${leader#n}"
  else
    # shellcheck disable=SC2153  # PG_PORT: cluster.conf's, read by load_conf
    echo "host=$dir/servers/pg port=$PG_PORT user=postgres dbname=rocket_rides connect_timeout=5"
  fi
}

restore() {
  local to="" latest=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --to) to=${2:?--to needs a time (RFC 3339, e.g. 2026-11-27T12:00:00Z)}; shift 2 ;;
      --latest) latest=1; shift ;;
      *) die "restore: unknown option $1 (--to TIME or --latest)" ;;
    esac
  done
  if { [ -n "$to" ] && [ -n "$latest" ]; } || { [ -z "$to" ] && [ -z "$latest" ]; }; then
    die "restore: say --to TIME or --latest"
  fi
  local config target=""
  config=$(backup_repo_config) || exit 1
  # Before anything stops: a target no backup reaches fails here, in one line.
  target=$(backup_check_restore_target "$config" "$to") || exit 1
  say_clock=$SECONDS
  if [ "${HA:-}" = 1 ]; then restore_ha "$target" "$to"; else restore_plain "$target" "$to"; fi
  say "restored"
}

restore_plain() {
  # The PostgreSQL part is the local servers' own restore (scripts/local-servers.sh restore: the
  # archive flushed for --latest, the data restored, recovery, writes closed); around it, what
  # only the cluster has: its daemons and PgBouncer stopped first (the stand-in provider and
  # HAProxy stay up: they hold no database state, and the provider's records are what
  # reconciliation reads), started again after, and the reconciliation pass with their settings.
  local to=$2 out
  say "stopping the daemons and PgBouncer"
  stop_members "${app_members[@]}"
  stop_members pgbouncer
  local -a how=(--latest)
  if [ -n "$to" ]; then how=(--to "$to"); fi
  out=$("$local_servers" restore "$dir/servers" "${how[@]}" --postgres-only) || die "restore: the PostgreSQL restore failed"
  restore_time=$(sed -n 's/^restored to: \([^ ]*\) .*/\1/p' <<<"$out")
  restore_since=$(sed -n 's/^reconcile since: //p' <<<"$out")
  after_restore "$(backup_config_here)"
  echo "$out"
}

restore_reconcile() {
  # Once the daemons run again: the reconciliation pass over the restored window (it reopens
  # writes), with the daemons' own settings.
  app_env
  backup_reconcile "$BIN_DIR/rocket-rides-api" "$restore_since" "${member_env[@]}"
}

after_restore() {
  local config=$1
  # The completers after the restore's own reconciliation: their continuous pass would otherwise
  # race it for the lease, and they should re-drive unfinished keys only once what the restore
  # lost has been rebuilt.
  say "starting PgBouncer and the daemons (the completers after reconciliation)"
  start_member pgbouncer
  start_app_members --no-completers
  restore_reconcile
  start_completers
  # The backups taken before the restore are of another history past the restore point: a later
  # restore starts from this one.
  backup_take "$config" full >/dev/null
}

node_data() { echo "$dir/patroni/n$1/data"; }

node_postgres_alive() { rrsuite postgres-pid "$dir" "$1" >/dev/null; }

restore_ha() {
  # The documented order (docs/high-availability.md, "Restoring the HA shape"): pause Patroni,
  # stop it everywhere, stop PostgreSQL, restore one node's data directory, recover it alone and
  # close writes, clear the cluster's keys in etcd, start that node's Patroni (it takes the
  # cluster over with its data), rebuild the standbys from a new full backup, resume.
  local target=$1 to=$2 leader n m config conninfo restored
  leader=$(leader_name || true)
  n=${leader#n}
  [ -n "$n" ] || n=1
  config=$(node_backup_config "$n")
  conninfo=$(node_conninfo "$n")
  if [ -z "$to" ] && [ -n "$leader" ]; then
    backup_flush "$config" || say "WARNING: restoring what the archive holds; later commits are lost"
  fi
  say "pausing Patroni (no failover while PostgreSQL stops)"
  patronictl -c "$dir/patroni/n$n.yml" pause --wait >&2 || say "WARNING: patronictl pause failed; going on"
  say "stopping the daemons and PgBouncer"
  stop_members "${app_members[@]}"
  stop_members pgbouncer
  say "stopping Patroni on every node (paused: each leaves its PostgreSQL running), then PostgreSQL"
  stop_members patroni1 patroni2 patroni3
  rrsuite stop-nodes-postgres "$dir"
  backup_restore_data "$config" "$(node_data "$n")" "$target"
  say "n$n: starting PostgreSQL alone (Unix socket only): it replays the archive$([ -n "$to" ] && echo " to $to") and promotes"
  # The restored postgresql.conf is Patroni's from whichever node the backup came from: this
  # node's port, socket and archive command win on the command line; no synchronous standby yet.
  rrsuite_server postgres-start "$(node_data "$n")" "$dir/patroni/n$n/restore.log" "${RESTORE_TIMEOUT:-600}" \
    "-p $(node_var "$n" PG_PORT) -c listen_addresses='' -c unix_socket_directories='$dir/patroni/n$n' -c synchronous_standby_names='' -c archive_mode=on -c \"archive_command=$(backup_archive_command "$config")\"" ||
    die "restore: PostgreSQL did not start on the restored data"
  backup_wait_promoted "$conninfo" "${RESTORE_TIMEOUT:-600}" node_postgres_alive "$n" ||
    { tail -n 20 "$dir/patroni/n$n/restore.log" >&2; die "restore: recovery did not finish"; }
  restored=$(backup_after_promote "$conninfo")
  backup_fence_restored "$config" "$conninfo" "$to" "$restored"
  # The standbys are built from the repository's newest backup: one of this history.
  backup_take "$config" full >/dev/null
  as_postgres "$PG_BIN_DIR/pg_ctl" -w -t 60 -D "$(node_data "$n")" -m fast stop >/dev/null
  say "clearing the cluster's keys in etcd (/service/rocket-rides/)"
  rrsuite etcd-clear "$dir"
  for m in 1 2 3; do
    if [ "$m" != "$n" ]; then as_postgres find "$(node_data "$m")" -mindepth 1 -delete 2>/dev/null || true; fi
  done
  say "starting patroni$n: it takes the cluster over with the restored data"
  start_member "patroni$n"
  rrsuite wait-primary "$dir" "$n" 60 || { log_tail "patroni$n"; die "restore: n$n did not become the leader within 60 s"; }
  say "rebuilding the standbys (from the repository)"
  for m in 1 2 3; do
    if [ "$m" != "$n" ]; then start_member "patroni$m"; fi
  done
  rrsuite wait-standbys "$dir" 120 || die "restore: the standbys did not come back"
  patronictl -c "$dir/patroni/n$n.yml" resume --wait >/dev/null 2>&1 || true
  rrsuite wait-serving-leader "$dir" 30 >/dev/null || die "restore: HAProxy does not reach the leader"
  # The completers after the restore's own reconciliation: their continuous pass would otherwise
  # race it for the lease, and they should re-drive unfinished keys only once what the restore
  # lost has been rebuilt.
  say "starting PgBouncer and the daemons (the completers after reconciliation)"
  start_member pgbouncer
  start_app_members --no-completers
  restore_reconcile
  start_completers
  backup_restore_report "$restored"
}

start_app_members() {
  # start_app_members [--no-completers]: the APIs first, then the other daemons.
  local name
  for name in api1 api2; do start_member "$name"; done
  for name in "${app_members[@]}"; do
    case "$name" in
      api*) ;;
      completer*) [ "${1:-}" = --no-completers ] || start_member "$name" ;;
      *) start_member "$name" ;;
    esac
  done
}

start_completers() {
  local name
  for name in "${app_members[@]}"; do
    case "$name" in completer*) start_member "$name" ;; esac
  done
}

status() {
  load_conf
  # A line per member (pid or "stopped", HAProxy's view of each API), the HA shape's leader and
  # nodes, then the backups.
  rrsuite status "$dir"
  local config conninfo
  if config=$(backup_config_here 2>/dev/null) && conninfo=$(backup_conninfo_here 2>/dev/null); then
    backup_status "$config" "$conninfo" "$(backup_verify_state)"
  else
    echo "backup: no archiving here$([ "${HA:-}" = 1 ] && echo " (no leader)")"
  fi
}

case "$cmd" in
  start)
    exec_rrsuite start "$dir" "$@"
    ;;
  stop | env | status | start-member | stop-member | restart | rolling-restart | leader | failover | \
    switchover | kill-postgres | partition | heal | backup | backups | restore | verify | backup-metrics)
    if [ ! -d "$dir" ]; then
      [ "$cmd" = stop ] && exit 0
      die "no cluster in $dir"
    fi
    dir=$(cd "$dir" && pwd)
    case "$cmd" in
      status) status ;;
      stop | env | start-member | stop-member | restart | rolling-restart | leader | failover | switchover | \
        kill-postgres | partition | heal)
        exec_rrsuite "$cmd" "$dir" "$@"
        ;;
      backup) load_conf; backup_take_as "$(backup_config_here)" "$@" ;;
      backups) load_conf; backup_list "$(backup_repo_config)" ;;
      restore) load_conf; restore "$@" ;;
      verify) load_conf; backup_verify "$(backup_repo_config)" "$(backup_verify_state)" ;;
      backup-metrics)
        load_conf
        backup_write_metrics "$(backup_config_here)" "$(backup_conninfo_here)" "${1:?backup-metrics needs a FILE}" \
          "$(backup_verify_state)"
        ;;
    esac
    ;;
  *) usage ;;
esac
