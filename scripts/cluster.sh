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

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then usage; fi
shift 2

# Every command is tools/rrsuite's (python3 -m rrsuite cluster: cluster_cli.py lists them, backups in
# cluster_backup.py, the restore in cluster_restore.py, pgBackRest in backup.py); this script is the
# command line operators and the docs use. rrsuite replaces this shell, so that a signal to the
# command (a test's timeout, ^C) reaches the Python that stops what a start started.
# shellcheck source=scripts/python3.sh
. "$repo/scripts/python3.sh"
exec_rrsuite() {
  RRSUITE_CLUSTER_SCRIPT=$0 PYTHONPATH="$repo/tools${PYTHONPATH:+:$PYTHONPATH}" exec "$python3" -m rrsuite cluster "$@"
}

case "$cmd" in
  start | stop | env | status | start-member | stop-member | restart | rolling-restart | leader | failover | \
    switchover | kill-postgres | partition | heal | backup | backups | restore | verify | backup-metrics)
    exec_rrsuite "$cmd" "$dir" "$@"
    ;;
  *) usage ;;
esac
