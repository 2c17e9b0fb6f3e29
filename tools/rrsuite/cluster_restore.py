"""scripts/cluster.sh restore DIR --to TIME|--latest, both shapes: the daemons and PgBouncer stopped
(the stand-in provider and HAProxy stay up: they hold no database state, and the provider's records
are what reconciliation reads), PostgreSQL restored and its writes closed, PgBouncer and the daemons
started again, the reconciliation pass with the daemons' own settings (the completers only after it),
and a full backup of the new history. From the moment the target is known good each progress line
says how far into the restore it is (RRSUITE_SAY_SINCE, which clusterdir.say reads): the operator
sees which step takes long. Prints "restored to: ..." and "reconcile since: ..." on stdout."""

import os
import subprocess
import sys
import time

from . import cluster_backup, ha_state, local_servers_backup, members, node_postgres, restore_steps
from .backup import BackupError, PgBackRest, archive_command
from .clusterdir import NODES, ClusterError, say
from .local_servers_dir import LocalServers
from .postgres import pg_ctl_start, pg_ctl_stop
from .process import HarnessError, http_get, print_tail


def parse(args):
    """--to TIME or --latest: the time, or "" for --latest."""
    to, latest = "", False
    while args:
        if args[0] == "--to":
            if len(args) < 2 or not args[1]:
                raise ClusterError("restore: --to needs a time (RFC 3339, e.g. 2026-11-27T12:00:00Z)")
            to, args = args[1], args[2:]
        elif args[0] == "--latest":
            latest, args = True, args[1:]
        else:
            raise ClusterError("restore: unknown option %s (--to TIME or --latest)" % args[0])
    if bool(to) == latest:
        raise ClusterError("restore: say --to TIME or --latest")
    return to


def restore(cluster, args):
    to = parse(args)
    # Before anything stops: a target no backup reaches fails here, in one line.
    target = PgBackRest(cluster_backup.repo_config(cluster), say).check_restore_target(to)
    os.environ["RRSUITE_SAY_SINCE"] = str(int(time.time()))
    restored = restore_ha(cluster, target, to) if cluster.ha else restore_plain(cluster, to)
    print(restored.report(), flush=True)
    say("restored")


def stop_app_and_pgbouncer(cluster):
    say("stopping the daemons and PgBouncer")
    members.stop_members(cluster, cluster.app_members)
    members.stop_members(cluster, ["pgbouncer"])


def restore_plain(cluster, to):
    """The PostgreSQL part is the local servers' own restore (local_servers_backup.restore: the
    archive flushed for --latest, the data restored, recovery, writes closed, in their voice);
    around it, what only the cluster has."""
    stop_app_and_pgbouncer(cluster)
    try:
        restored = local_servers_backup.restore(LocalServers(cluster.file("servers")), to, postgres_only=True)
    except ClusterError as error:
        if str(error):
            local_servers_backup.say(str(error))
        raise ClusterError("restore: the PostgreSQL restore failed") from None
    # The fence was closed by the local servers' restore; as when that ran in a process of its own,
    # a reconciliation that fails says the command to run without "writes stay closed".
    restored.writes_closed = False
    restart_app(cluster, restored)
    # The backups taken before the restore are of another history past the restore point: a later
    # restore starts from this one.
    PgBackRest(cluster_backup.config_here(cluster), say).take("full")
    return restored


def restart_app(cluster, restored):
    """PgBouncer and the daemons again. The completers after the restore's own reconciliation: their
    continuous pass would otherwise race it for the lease, and they should re-drive unfinished keys
    only once what the restore lost has been rebuilt."""
    say("starting PgBouncer and the daemons (the completers after reconciliation)")
    members.start_member(cluster, "pgbouncer")
    completers = [name for name in cluster.app_members if name.startswith("completer")]
    for name in ["api1", "api2"] + [m for m in cluster.app_members if not m.startswith(("api", "completer"))]:
        members.start_member(cluster, name)
    # Once the daemons run again: the reconciliation pass over the restored window (it reopens
    # writes), with the daemons' own settings.
    if restore_steps.reconcile(cluster.bin("rocket-rides-api"), restored.since, cluster.app_env(), say,
                               restored.writes_closed):
        wait_writes_open(cluster)
    for name in completers:
        members.start_member(cluster, name)


WRITES_OPEN_SECONDS = 10


def wait_writes_open(cluster):
    """Until each API has seen the pass reopen writes: an API asks for open fences every two seconds
    and answers writes with 503 until it has, so without this wait a client's first write after
    "restored" could meet an API that has not asked yet. Each API says which in GET /readyz."""
    apis = [name for name in ("api1", "api2") if name in cluster.app_members]

    def still_closed():
        return [name for name in apis if writes_closed_at(cluster.port(name.upper() + "_PORT"))]

    closed = [] if ha_state.poll(lambda: not still_closed(), WRITES_OPEN_SECONDS) else still_closed()
    if closed:
        say("WARNING: %s still answer%s writes with 503 %d s after reconciliation reopened them (GET /readyz)" % (
            " and ".join(closed), "s" if len(closed) == 1 else "", WRITES_OPEN_SECONDS))
    else:
        say("%s take writes again" % " and ".join(apis))


def writes_closed_at(port):
    """Whether the API on `port` does not answer /readyz with writes open (a closed fence's body names
    "writes"; an API that does not answer counts as closed)."""
    status, body = http_get(port, "/readyz")
    return status != 200 or '"writes"' in body


def patronictl(cluster, n, *command, quiet=False):
    return subprocess.run(["patronictl", "-c", cluster.file("patroni", "n%d.yml" % n)] + list(command),
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL if quiet else sys.stderr.fileno(),
                          stderr=subprocess.DEVNULL if quiet else None).returncode == 0


def restore_ha(cluster, target, to):
    """The documented order (docs/high-availability.md, "Restoring the HA shape"): pause Patroni,
    stop it everywhere, stop PostgreSQL, restore one node's data directory, recover it alone and
    close writes, clear the cluster's keys in etcd, start that node's Patroni (it takes the cluster
    over with its data), rebuild the standbys from a new full backup, resume."""
    leader = cluster_backup.leader_number(cluster)
    n = leader or 1
    pgbackrest = PgBackRest(cluster_backup.node_config(cluster, n), say)
    conninfo = cluster_backup.node_conninfo(cluster, n)
    data = node_postgres.data_dir(cluster, n)
    if not to and leader is not None and not pgbackrest.flush():
        say("WARNING: restoring what the archive holds; later commits are lost")
    say("pausing Patroni (no failover while PostgreSQL stops)")
    if not patronictl(cluster, n, "pause", "--wait"):
        say("WARNING: patronictl pause failed; going on")
    stop_app_and_pgbouncer(cluster)
    say("stopping Patroni on every node (paused: each leaves its PostgreSQL running), then PostgreSQL")
    members.stop_members(cluster, ["patroni%d" % m for m in NODES])
    node_postgres.stop_all(cluster)
    restore_steps.restore_data(pgbackrest, data, target)
    say("n%d: starting PostgreSQL alone (Unix socket only): it replays the archive%s and promotes" % (
        n, " to " + to if to else ""))
    # The restored postgresql.conf is Patroni's from whichever node the backup came from: this
    # node's port, socket and archive command win on the command line; no synchronous standby yet.
    log = cluster.file("patroni", "n%d" % n, "restore.log")
    seconds = restore_steps.restore_timeout()
    try:
        pg_ctl_start(data, log, seconds, "-p %s -c listen_addresses='' -c unix_socket_directories='%s' "
                     "-c synchronous_standby_names='' -c archive_mode=on -c \"archive_command=%s\"" % (
                         cluster.conf["NODE%d_PG_PORT" % n], cluster.file("patroni", "n%d" % n),
                         archive_command(pgbackrest.config)))
    except HarnessError as error:
        print("rrsuite server postgres-start: %s" % error, file=sys.stderr, flush=True)
        raise ClusterError("restore: PostgreSQL did not start on the restored data") from None
    try:
        restore_steps.wait_promoted(conninfo, seconds, lambda: node_postgres.postmaster_pid(cluster, n) is not None,
                                    say)
    except BackupError:
        print_tail(log, 20)
        raise ClusterError("restore: recovery did not finish") from None
    restored = restore_steps.fence_restored(pgbackrest, conninfo, to, restore_steps.after_promote(conninfo))
    # The standbys are built from the repository's newest backup: one of this history.
    pgbackrest.take("full")
    if not pg_ctl_stop(data, 60, "fast", bin_dir=cluster.conf["PG_BIN_DIR"]):
        raise ClusterError("restore: n%d's PostgreSQL did not stop" % n)
    say("clearing the cluster's keys in etcd (%s)" % ha_state.SCOPE_PREFIX)
    ha_state.clear_keys(cluster)
    for m in NODES:
        if m != n:
            restore_steps.empty_directory(node_postgres.data_dir(cluster, m))
    say("starting patroni%d: it takes the cluster over with the restored data" % n)
    members.start_member(cluster, "patroni%d" % n)
    if not ha_state.wait_primary(cluster, n, 60):
        cluster.log_tail("patroni%d" % n)
        raise ClusterError("restore: n%d did not become the leader within 60 s" % n)
    say("rebuilding the standbys (from the repository)")
    for m in NODES:
        if m != n:
            members.start_member(cluster, "patroni%d" % m)
    if not ha_state.wait_standbys(cluster, 120):
        raise ClusterError("restore: the standbys did not come back")
    patronictl(cluster, n, "resume", "--wait", quiet=True)
    if ha_state.wait_serving_leader(cluster, 30) is None:
        raise ClusterError("restore: HAProxy does not reach the leader")
    restart_app(cluster, restored)
    return restored
