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
# hex), ...: see capture_settings) and recorded in
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

say() {
  # During a restore each line says how far in it is: the operator sees which step takes long.
  if [ -n "${say_clock:-}" ]; then echo "cluster: [+$((SECONDS - say_clock)) s] $*" >&2; else echo "cluster: $*" >&2; fi
}
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

pick_app_ports() {
  # The ports of everything in front of PostgreSQL, the same in both shapes.
  PGBOUNCER_PORT=$(pick_port)
  HAPROXY_PORT=$(pick_port)
  HAPROXY_STATS_PORT=$(pick_port)
  MOCK_PORT=$(pick_port)
  API1_PORT=$(pick_port)
  API2_PORT=$(pick_port)
}

# --- state files -------------------------------------------------------------------------------

load_conf() {
  [ -f "$dir/cluster.conf" ] || die "no cluster in $dir (run: $0 start $dir)"
  # shellcheck disable=SC1091
  . "$dir/cluster.conf"
  if [ "${HA:-}" = 1 ]; then ha_members; fi
}


# The export lines and DIR/app.env (the daemons' settings from this environment, with the
# cluster's defaults: tools/rrsuite/cluster_cli.py's capture_settings says which).
print_env() { rrsuite env "$dir"; }
capture_settings() { rrsuite capture-settings "$dir"; }

# --- processes: tools/rrsuite -------------------------------------------------------------------
# How each member starts (its command line, user, environment, its node's network namespace and
# its readiness: etcd and Patroni too) and how every member stops are tools/rrsuite's (members.py),
# and so is the plain shape as a whole (cluster_cli.py), the HA shape's node namespaces and
# partitions (node_netns.py) and its PostgreSQL servers as processes (node_postgres.py): each
# server's start-up written once outside C++. What stays here: the HA shape's start and commands,
# and backups and restore.

rrsuite() {
  # rrsuite COMMAND DIR ARGS...: python3 -m rrsuite cluster COMMAND DIR ARGS... During a restore
  # its lines say how far in it is, as ours do.
  local since=""
  if [ -n "${say_clock:-}" ]; then since=$(($(date +%s) - (SECONDS - say_clock))); fi
  RRSUITE_SAY_SINCE=$since RRSUITE_CLUSTER_SCRIPT=$0 PYTHONPATH="$repo/tools${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m rrsuite cluster "$@"
}

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

base_env() {
  # What the daemons' commands run here get besides their settings: nothing else leaks in from the
  # caller's shell.
  member_env=("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "LANG=C.UTF-8" "HOME=${1:-/}")
}

app_env() {
  # The daemons' environment (the restore's reconciliation pass runs with it).
  base_env /
  local -a lines=()
  mapfile -t lines <"$dir/app.env"
  member_env+=("${lines[@]}")
}

log_tail() { tail -n 15 "$dir/logs/$1.log" 2>/dev/null | sed 's/^/    /' >&2 || true; }

# --- the application's start, the same in both shapes ----------------------------------------

# Migrate through PgBouncer, and the demo rider's token in DIR/token.
migrate_through_pgbouncer() { rrsuite migrate "$dir"; }

start_provider_and_apis() {
  say "starting the stand-in provider on $MOCK_PORT"
  start_member stripe-mock
  say "starting api1 on $API1_PORT and api2 on $API2_PORT"
  start_member api1
  start_member api2
}

# Both APIs in rotation, then one request through HAProxy as a client makes it.
check_apis_through_haproxy() { rrsuite check-apis "$dir"; }

# stop_member NAME [--kill]: returns once it has exited and, for an API, HAProxy has taken it out
# of rotation.
stop_member() { rrsuite stop-member "$dir" "$1" ${2:+"$2"}; }

start_member() { rrsuite start-member "$dir" "$1"; }

# stop_members [--kill] NAME...: signals them all (each its graceful signal, or kill -9), then waits
# for each within its bound and kills what is left. Never returns while one of them still runs.
stop_members() { rrsuite stop-members "$dir" "$@"; }

stop_all() {
  if [ -f "$dir/cluster.conf" ]; then
    load_conf
    if [ "${HA:-}" = 1 ]; then stop_all_ha; return; fi
  fi
  rrsuite stop "$dir"
}

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

node_postgres_alive() { postmaster_pid "$1" >/dev/null; }

stop_nodes_postgres() { rrsuite stop-nodes-postgres "$dir"; }

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
  stop_nodes_postgres
  backup_restore_data "$config" "$(node_data "$n")" "$target"
  say "n$n: starting PostgreSQL alone (Unix socket only): it replays the archive$([ -n "$to" ] && echo " to $to") and promotes"
  # The restored postgresql.conf is Patroni's from whichever node the backup came from: this
  # node's port, socket and archive command win on the command line; no synchronous standby yet.
  as_postgres "$PG_BIN_DIR/pg_ctl" -w -t "${RESTORE_TIMEOUT:-600}" -D "$(node_data "$n")" -l "$dir/patroni/n$n/restore.log" \
    -o "-p $(node_var "$n" PG_PORT) -c listen_addresses='' -c unix_socket_directories='$dir/patroni/n$n' -c synchronous_standby_names='' -c archive_mode=on -c \"archive_command=$(backup_archive_command "$config")\"" \
    start >/dev/null || { tail -n 20 "$dir/patroni/n$n/restore.log" >&2; die "restore: PostgreSQL did not start on the restored data"; }
  backup_wait_promoted "$conninfo" "${RESTORE_TIMEOUT:-600}" node_postgres_alive "$n" ||
    { tail -n 20 "$dir/patroni/n$n/restore.log" >&2; die "restore: recovery did not finish"; }
  restored=$(backup_after_promote "$conninfo")
  backup_fence_restored "$config" "$conninfo" "$to" "$restored"
  # The standbys are built from the repository's newest backup: one of this history.
  backup_take "$config" full >/dev/null
  as_postgres "$PG_BIN_DIR/pg_ctl" -w -t 60 -D "$(node_data "$n")" -m fast stop >/dev/null
  say "clearing the cluster's keys in etcd (/service/rocket-rides/)"
  etcdctl_ del --prefix /service/rocket-rides/ >/dev/null
  for m in 1 2 3; do
    if [ "$m" != "$n" ]; then as_postgres find "$(node_data "$m")" -mindepth 1 -delete 2>/dev/null || true; fi
  done
  say "starting patroni$n: it takes the cluster over with the restored data"
  start_member "patroni$n"
  local _ up=""
  for _ in $(seq 1 300); do
    if curl -fs -o /dev/null --max-time 1 "$(rest_url "$n")/primary"; then up=1; break; fi
    member_pid "patroni$n" >/dev/null || break
    sleep 0.2
  done
  [ -n "$up" ] || { log_tail "patroni$n"; die "restore: n$n did not become the leader within 60 s"; }
  say "rebuilding the standbys (from the repository)"
  for m in 1 2 3; do
    if [ "$m" != "$n" ]; then start_member "patroni$m"; fi
  done
  wait_standbys 120 || die "restore: the standbys did not come back"
  patronictl -c "$dir/patroni/n$n.yml" resume --wait >/dev/null 2>&1 || true
  wait_serving_leader 30 >/dev/null || die "restore: HAProxy does not reach the leader"
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

# --- start -------------------------------------------------------------------------------------

# PgBouncer's site file (deploy/pgbouncer.ini included unchanged; CLUSTER_PGBOUNCER_OVERRIDES
# appended for experiments only) and the check that its policy is in force.
write_pgbouncer_site() { rrsuite pgbouncer-site "$dir"; }

on_start_exit() {
  if [ "$1" -ne 0 ]; then
    say "start failed: stopping what was started"
    stop_all
  fi
}

check_pgbouncer_policy() { rrsuite check-pgbouncer "$dir"; }

start_all() {
  # The HA shape (start --ha); the plain shape's start is tools/rrsuite's (cluster_cli.py), with the
  # same checks and messages.
  local bin_dir=${ROCKET_RIDES_BIN:-$repo/build/bin}
  while [ $# -gt 0 ]; do
    case "$1" in
      --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift 2 ;;
      --ha) HA=1; shift ;;
      --async) ASYNC=1; shift ;;
      --netns) NETNS_PREFIX=${2:?--netns needs a prefix}; shift 2 ;;
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
  for b in patroni etcd etcdctl redis-server; do
    command -v "$b" >/dev/null || die "$b missing (scripts/install-deps.sh installs it)"
  done

  if [ -f "$dir/cluster.conf" ]; then
    load_conf
    [ "${HA:-}" = 1 ] || die "$dir holds a cluster of the other shape: stop it and use another directory"
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
  start_all_ha "$bin_dir"
}

# --- the HA shape (--ha): etcd, Patroni, HAProxy's PostgreSQL port --------------------------------

ha_members() {
  members=(etcd1 etcd2 etcd3 patroni1 patroni2 patroni3 pgbouncer haproxy stripe-mock api1 api2
    enqueuer1 enqueuer2 completer1 completer2 reaper1 reaper2)
  app_members=(api1 api2 enqueuer1 enqueuer2 completer1 completer2 reaper1 reaper2)
}

need_ha() { [ "${HA:-}" = 1 ] || die "$cmd: only for a cluster started with --ha"; }

node_var() {
  # node_var N NAME: the value of NODEN_NAME from cluster.conf.
  local var=NODE$1_$2
  echo "${!var}"
}

node_address() {
  if [ -n "${NETNS_PREFIX:-}" ]; then echo "10.213.${NETNS_NET}.$((10 + $1))"; else echo 127.0.0.1; fi
}

rest_url() { echo "http://$(node_address "$1"):$(node_var "$1" REST_PORT)"; }

etcd_endpoints() {
  local n list=""
  for n in 1 2 3; do list="${list:+$list,}http://$(node_address "$n"):$(node_var "$n" ETCD_CLIENT_PORT)"; done
  echo "$list"
}

etcdctl_() { ETCDCTL_API=3 etcdctl --endpoints="$(etcd_endpoints)" --dial-timeout=1s --command-timeout=2s "$@"; }

as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

fill_template() {
  # fill_template IN OUT NAME=VALUE...: each @NAME@ in IN replaced by VALUE (no '|' in values).
  local in=$1 out=$2 pair expr=()
  shift 2
  for pair in "$@"; do expr+=(-e "s|@${pair%%=*}@|${pair#*=}|g"); done
  sed "${expr[@]}" "$in" >"$out"
  if grep -q '@[A-Z_]*@' "$out"; then die "$out: placeholders left unfilled: $(grep -o '@[A-Z_]*@' "$out" | sort -u | tr '\n' ' ')"; fi
}

write_etcd_config() {
  local n=$1 m initial=""
  for m in 1 2 3; do initial="${initial:+$initial,}etcd$m=http://$(node_address "$m"):$(node_var "$m" ETCD_PEER_PORT)"; done
  mkdir -p "$dir/etcd"
  fill_template "$repo/deploy/etcd.conf.yml.in" "$dir/etcd/etcd$n.yml" \
    "NAME=etcd$n" "DATA_DIR=$dir/etcd/etcd$n.data" "ADDRESS=$(node_address "$n")" \
    "CLIENT_PORT=$(node_var "$n" ETCD_CLIENT_PORT)" "PEER_PORT=$(node_var "$n" ETCD_PEER_PORT)" \
    "INITIAL_CLUSTER=$initial" "CLUSTER_TOKEN=$CLUSTER_TOKEN"
}

write_patroni_config() {
  local n=$1 hosts="" m network=127.0.0.1/32
  for m in 1 2 3; do hosts="${hosts:+$hosts,}$(node_address "$m"):$(node_var "$m" ETCD_CLIENT_PORT)"; done
  if [ -n "${NETNS_PREFIX:-}" ]; then network="10.213.${NETNS_NET}.0/24"; fi
  local sync=true
  if [ "${ASYNC:-}" = 1 ]; then sync=false; fi
  local node_dir=$dir/patroni/n$n config
  config=$(node_backup_config "$n")
  mkdir -p "$node_dir"
  fill_template "$repo/deploy/patroni.yml.in" "$dir/patroni/n$n.yml" \
    "SCOPE=rocket-rides" "NAME=n$n" "ADDRESS=$(node_address "$n")" \
    "PG_PORT=$(node_var "$n" PG_PORT)" "REST_PORT=$(node_var "$n" REST_PORT)" \
    "DATA_DIR=$node_dir/data" "SOCKET_DIR=$node_dir" "BIN_DIR=$PG_BIN_DIR" "ETCD_HOSTS=$hosts" \
    "CLIENT_NETWORK=$network" "AUTH_METHOD=trust" \
    "SUPERUSER_PASSWORD=unused-under-trust" "REPLICATION_PASSWORD=unused-under-trust" \
    "SYNCHRONOUS_MODE=$sync" "ARCHIVE_COMMAND=$(backup_archive_command "$config")" \
    "RESTORE_COMMAND=$(backup_patroni_restore_command "$config" "$PG_BIN_DIR")" \
    "REPLICA_COMMAND=pgbackrest --config=$config --stanza=$backup_stanza --type=standby --target-timeline=latest restore"
  # Every node archives into the one repository; spool, log and locks are the node's own.
  backup_write_config "$config" "$(backup_repo_path)" "$node_dir/data" "$(node_var "$n" PG_PORT)" "$node_dir" \
    "$node_dir/pgbackrest"
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres:postgres "$node_dir" "$dir/patroni/n$n.yml"; fi
  chmod 700 "$node_dir"
}

cluster_json() {
  # Patroni's /cluster from the first node that answers (each one's view comes from etcd).
  local n
  for n in 1 2 3; do
    if curl -fsS --max-time 1 "$(rest_url "$n")/cluster" 2>/dev/null; then return 0; fi
  done
  return 1
}

leader_name() {
  # The holder of the leader lock in etcd (what Patroni's own view comes from), or exit 1.
  local name
  name=$(etcdctl_ get --print-value-only /service/rocket-rides/leader 2>/dev/null | head -n 1) || true
  if [ -n "$name" ]; then echo "$name"; return 0; fi
  return 1
}

haproxy_pg_state() {
  # HAProxy's view of node nX in the PostgreSQL section: UP for the leader, DOWN for the others.
  curl -fsS --max-time 2 "http://127.0.0.1:${HAPROXY_STATS_PORT}/stats;csv" 2>/dev/null |
    awk -F, -v server="$1" '$1 == "postgres" && $2 == server { print $18 }'
}

serving_leader() {
  # The node HAProxy sends PostgreSQL connections to and that answers there as a primary.
  local n
  for n in 1 2 3; do
    if [ "$(haproxy_pg_state "n$n")" = UP ]; then
      if [ "$(psql -X -At -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres --set=connect_timeout=2 \
          -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; then
        echo "n$n"
        return 0
      fi
    fi
  done
  return 1
}

wait_serving_leader() {
  # wait_serving_leader SECONDS [NOT]: until a leader (other than NOT) serves through HAProxy.
  local seconds=$1 not=${2:-} leader _
  for _ in $(seq 1 $((seconds * 5))); do
    if leader=$(serving_leader) && [ "$leader" != "$not" ]; then echo "$leader"; return 0; fi
    sleep 0.2
  done
  return 1
}

replication_rows() {
  # From the leader: "name state sync_state lag_bytes" per standby connected to it.
  local leader=$1
  psql -X -At -F ' ' -h "$(node_address "${leader#n}")" -p "$(node_var "${leader#n}" PG_PORT)" -U postgres \
    -d postgres --set=connect_timeout=2 -c "SELECT application_name, state, sync_state,
      COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), -1)::bigint FROM pg_stat_replication" 2>/dev/null
}

wait_standbys() {
  # wait_standbys SECONDS: until both standbys stream from the leader (one of them synchronous,
  # unless --async).
  local seconds=$1 leader rows _
  for _ in $(seq 1 $((seconds * 5))); do
    if leader=$(leader_name); then
      rows=$(replication_rows "$leader" || true)
      if [ "$(echo "$rows" | grep -c ' streaming ')" -ge 2 ]; then
        if [ "${ASYNC:-}" = 1 ] || echo "$rows" | grep -q ' streaming sync '; then return 0; fi
      fi
    fi
    sleep 0.2
  done
  say "the standbys are not both streaming after $seconds s (leader: ${leader:-none}): $rows"
  return 1
}

# The node namespaces (--netns) and partitions are tools/rrsuite's (node_netns.py).
setup_netns() {
  rrsuite netns-up "$dir" "$NETNS_PREFIX"
  NETNS_NET=$(sed -n 's/^NETNS_NET=//p' "$dir/cluster.conf")
}

teardown_netns() {
  if [ -n "${NETNS_PREFIX:-}" ]; then rrsuite netns-down "$dir"; fi
}

partition_node() { rrsuite "$1" "$dir" "$2"; }

# The nodes' PostgreSQL as processes (their pids, kill -9, the orphans' /proc scan) are
# tools/rrsuite's (node_postgres.py).
postmaster_pid() { rrsuite postgres-pid "$dir" "$1"; }
kill_postgres() { rrsuite kill-postgres "$dir" "$1"; }
stop_orphan_postgres() { rrsuite stop-orphan-postgres "$dir"; }

change_leader() {
  # failover|switchover [--candidate nX]: through Patroni's REST API; returns once the new
  # leader serves through HAProxy.
  local what=$1 candidate=""
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --candidate) candidate=${2:?--candidate needs a node}; shift 2 ;;
      *) die "$what: unknown option $1" ;;
    esac
  done
  local old json
  old=$(leader_name) || die "$what: there is no leader"
  json=$(cluster_json) || die "$what: no Patroni REST API answers"
  if [ -z "$candidate" ]; then
    # The synchronous standby (the only one Patroni promotes in synchronous mode), else a running
    # replica.
    candidate=$(printf '%s' "$json" | python3 -c '
import json, sys
members = json.load(sys.stdin)["members"]
for role in ("sync_standby", "replica"):
    for m in members:
        if m["role"] == role and m.get("state") in ("running", "streaming"):
            print(m["name"]); sys.exit(0)
sys.exit(1)') || die "$what: no standby to promote"
  fi
  [ "$candidate" != "$old" ] || die "$what: $candidate is the leader already"
  if [ "${ASYNC:-}" != 1 ]; then
    # Patroni refuses any other (a 503 with "candidate does not match with sync_standbys").
    local sync
    sync=$(printf '%s' "$json" | python3 -c '
import json, sys
print(" ".join(m["name"] for m in json.load(sys.stdin)["members"] if m["role"] == "sync_standby"))')
    case " $sync " in
      *" $candidate "*) ;;
      *) die "$what: in synchronous mode only the synchronous standby (${sync:-none now}) may be promoted, not $candidate" ;;
    esac
  fi
  local body
  if [ "$what" = switchover ]; then body="{\"leader\": \"$old\", \"candidate\": \"$candidate\"}"
  else body="{\"candidate\": \"$candidate\"}"
  fi
  say "$what from $old to $candidate"
  local n answer="" sent=""
  for n in 1 2 3; do
    if answer=$(curl -sS --max-time 60 -w ' (HTTP %{http_code})' -X POST -H 'Content-Type: application/json' \
        -d "$body" "$(rest_url "$n")/$what" 2>&1); then
      sent=1
      break
    fi
  done
  [ -n "$sent" ] || die "$what: no Patroni REST API took the request: $answer"
  case "$answer" in *"(HTTP 200)") say "patroni: $answer" ;; *) die "$what refused: $answer" ;; esac
  local new
  new=$(wait_serving_leader 60 "$old") || die "$what: no new leader serves through HAProxy after 60 s"
  echo "old leader: $old"
  echo "new leader: $new"
}

status_ha() {
  # After the member lines: the leader and each node's role, replication and lag.
  local leader rows json=""
  if leader=$(leader_name); then echo "leader: $leader"; else echo "leader: none"; leader=""; fi
  json=$(cluster_json || true)
  rows=""
  if [ -n "$leader" ]; then rows=$(replication_rows "$leader" || true); fi
  local n role state lag row pg
  for n in 1 2 3; do
    role=unknown state=unknown lag=unknown
    if [ -n "$json" ]; then
      read -r role state lag < <(printf '%s' "$json" | python3 -c '
import json, sys
for m in json.load(sys.stdin)["members"]:
    if m["name"] == sys.argv[1]:
        print(m["role"], m.get("state") or "unknown", m.get("lag", 0)); break
else:
    print("absent", "unknown", "unknown")' "n$n") || true
    fi
    if pg=$(postmaster_pid "$n"); then pg="postgres=$pg"; else pg="postgres=stopped"; fi
    row=$(echo "$rows" | awk -v name="n$n" '$1 == name { print "replication=" $2 " sync_state=" $3 " replay_lag_bytes=" $4 }')
    if [ -z "$row" ] && [ "n$n" != "$leader" ]; then row="replication=none"; fi
    echo "n$n role=$role state=$state lag=$lag ${row:+$row }$pg haproxy=$(haproxy_pg_state "n$n" | tr ' ' _)"
  done
}

start_all_ha() {
  local bin_dir=$1 n var
  if [ -d "$dir/etcd" ] || [ -d "$dir/patroni" ]; then
    # New ports each start, and etcd members keep their peers' old addresses in their data.
    die "$dir holds the data of a stopped HA cluster, which start does not reuse: use a new DIR (or remove $dir/etcd and $dir/patroni)"
  fi
  PG_BIN_DIR=/usr/lib/postgresql/15/bin
  [ -x "$PG_BIN_DIR/postgres" ] || die "PostgreSQL 15 missing ($PG_BIN_DIR)"
  taken_ports=" "
  BIN_DIR=$bin_dir
  CLUSTER_TOKEN="rocket-rides-$(od -An -tx1 -N6 /dev/urandom | tr -d ' \n')"
  REDIS_PORT=$(pick_port)
  PG_PORT=$(pick_port)  # HAProxy's PostgreSQL port: the leader, whichever it is
  for n in 1 2 3; do
    for var in ETCD_CLIENT_PORT ETCD_PEER_PORT PG_PORT REST_PORT; do
      printf -v "NODE${n}_$var" '%s' "$(pick_port)"
    done
  done
  pick_app_ports
  {
    echo "HA=1"
    echo "ASYNC=${ASYNC:-}"
    for var in BIN_DIR PG_BIN_DIR CLUSTER_TOKEN PG_PORT REDIS_PORT PGBOUNCER_PORT HAPROXY_PORT HAPROXY_STATS_PORT \
        MOCK_PORT API1_PORT API2_PORT NODE{1,2,3}_{ETCD_CLIENT_PORT,ETCD_PEER_PORT,PG_PORT,REST_PORT}; do
      printf '%s=%q\n' "$var" "${!var}"
    done
  } >"$dir/cluster.conf"
  ha_members
  if [ -n "${NETNS_PREFIX:-}" ]; then setup_netns; fi

  say "starting Redis on $REDIS_PORT in $dir/servers"
  mkdir -p "$dir/servers"
  printf 'PG_PORT=%s\nREDIS_PORT=%s\n' "$PG_PORT" "$REDIS_PORT" >"$dir/servers/ports"
  PYTHONPATH="$repo/tools${PYTHONPATH:+:$PYTHONPATH}" python3 -m rrsuite server redis "$REDIS_PORT" "$dir/servers" \
    "$dir/servers/redis.pid" "$dir/servers/redis.log"

  say "starting etcd1..3 (clients on $(etcd_endpoints))"
  for n in 1 2 3; do write_etcd_config "$n"; done
  for n in 1 2 3; do start_member "etcd$n"; done
  local healthy=""
  for _ in $(seq 1 150); do
    if etcdctl_ endpoint health >/dev/null 2>&1; then healthy=1; break; fi
    sleep 0.2
  done
  [ -n "$healthy" ] || { log_tail etcd1; die "etcd is not healthy after 30 s"; }

  say "starting patroni1 (it initialises n1, the first leader)"
  for n in 1 2 3; do write_patroni_config "$n"; done
  start_member patroni1
  local leader=""
  for _ in $(seq 1 300); do
    if curl -fs -o /dev/null --max-time 1 "$(rest_url 1)/primary"; then leader=n1; break; fi
    member_pid patroni1 >/dev/null || break
    sleep 0.2
  done
  [ -n "$leader" ] || { log_tail patroni1; die "n1 did not become the leader within 60 s"; }
  say "creating the backup stanza (n1 archives from now on)"
  backup_stanza_create "$(node_backup_config 1)"
  say "starting patroni2 and patroni3 (standbys: a base backup of n1 each)"
  start_member patroni2
  start_member patroni3
  wait_standbys 90 || { log_tail patroni2; log_tail patroni3; die "the standbys did not come up"; }

  capture_settings
  write_pgbouncer_site
  say "starting HAProxy on $HAPROXY_PORT (PostgreSQL leader on $PG_PORT, stats on $HAPROXY_STATS_PORT)"
  start_member haproxy
  wait_serving_leader 20 >/dev/null || die "HAProxy does not reach the leader on $PG_PORT"
  psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c 'CREATE DATABASE rocket_rides' >/dev/null

  say "starting PgBouncer on $PGBOUNCER_PORT (through HAProxy's $PG_PORT)"
  start_member pgbouncer
  check_pgbouncer_policy

  migrate_through_pgbouncer
  start_provider_and_apis
  check_apis_through_haproxy
  say "starting enqueuer1, enqueuer2, completer1, completer2, reaper1, reaper2"
  local name
  for name in enqueuer1 enqueuer2 completer1 completer2 reaper1 reaper2; do start_member "$name"; done
  trap - EXIT
  say "up: API at http://127.0.0.1:${HAPROXY_PORT}, leader $(leader_name || echo none) (logs in $dir/logs)"
  print_env
}

stop_all_ha() {
  say "stopping the members"
  # The daemons first (HAProxy takes each API out as it drains), then PgBouncer, then HAProxy:
  # HAProxy's soft stop waits for the PostgreSQL sessions it carries (PgBouncer's) to end, up
  # to hard-stop-after (30 s), so it goes once they are gone.
  stop_members "${app_members[@]}" stripe-mock
  stop_members pgbouncer
  stop_members haproxy
  # Each patroni stops its PostgreSQL (a leader first gives up its lock), then etcd one member at
  # a time: a member stopping hands raft leadership to a live peer, which it cannot do (and
  # waits for seconds) when they all stop at once.
  stop_members patroni1 patroni2 patroni3
  stop_orphan_postgres
  stop_members etcd1
  stop_members etcd2
  stop_members etcd3
  if [ -f "$dir/servers/redis.pid" ]; then
    say "stopping Redis"
    "$local_servers" stop "$dir/servers" >&2 || true
  fi
  teardown_netns
}

# api1 then api2, each only while the other is UP behind HAProxy.
rolling_restart() { rrsuite rolling-restart "$dir"; }

status() {
  load_conf
  # A line per member (pid or "stopped", HAProxy's view of each API), then the HA shape's nodes
  # and the backups.
  rrsuite status "$dir"
  if [ "${HA:-}" = 1 ]; then status_ha; fi
  local config conninfo
  if config=$(backup_config_here 2>/dev/null) && conninfo=$(backup_conninfo_here 2>/dev/null); then
    backup_status "$config" "$conninfo" "$(backup_verify_state)"
  else
    echo "backup: no archiving here$([ "${HA:-}" = 1 ] && echo " (no leader)")"
  fi
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    case " $* " in
      *" --ha "*) start_all "$@" ;;
      *) rrsuite start "$dir" "$@" ;;
    esac
    ;;
  stop | env | status | start-member | stop-member | restart | rolling-restart | leader | failover | \
    switchover | kill-postgres | partition | heal | backup | backups | restore | verify | backup-metrics)
    if [ ! -d "$dir" ]; then
      [ "$cmd" = stop ] && exit 0
      die "no cluster in $dir"
    fi
    dir=$(cd "$dir" && pwd)
    case "$cmd" in
      stop) stop_all ;;
      env) print_env ;;
      status) status ;;
      start-member | restart) rrsuite "$cmd" "$dir" "${1:-}" ;;
      stop-member) rrsuite stop-member "$dir" "${1:-}" ${2:+"$2"} ;;
      rolling-restart) rolling_restart ;;
      leader) load_conf; need_ha; leader_name ;;
      failover | switchover) load_conf; need_ha; change_leader "$cmd" "$@" ;;
      kill-postgres) load_conf; need_ha; kill_postgres "${1:-}" ;;
      partition | heal) load_conf; need_ha; partition_node "$cmd" "${1:-}" ;;
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
