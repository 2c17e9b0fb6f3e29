"""scripts/cluster.sh's backups, both shapes (docs/operations.md, "Backups and restore"): which
pgBackRest configuration and which PostgreSQL each command uses, and the commands backup, backups,
verify, backup-metrics and the backup lines of status. PostgreSQL archives through pgBackRest from
the start: the plain shape's local servers through DIR/servers/pgbackrest/pgbackrest.conf, each HA
node through DIR/patroni/nN/pgbackrest.conf (whichever node leads archives), all into one
repository, BACKUP_REPO_PATH (default DIR/servers/backup-repo, HA DIR/backup-repo)."""

import os

from . import ha_state
from .backup import BackupError, PgBackRest
from .clusterdir import ClusterError, say


def repo_path(cluster):
    default = cluster.file("backup-repo") if cluster.ha else cluster.file("servers", "backup-repo")
    return os.environ.get("BACKUP_REPO_PATH") or default


def node_config(cluster, n):
    return cluster.file("patroni", "n%d" % n, "pgbackrest.conf")


def verify_state(cluster):
    """Where `verify` records its result for status and the metrics."""
    return cluster.file("backup-verify.json")


def node_conninfo(cluster, n, dbname="rocket_rides"):
    # Through the Unix socket: it works from here even when the node is in a namespace of its own.
    return "host=%s port=%s user=postgres dbname=%s connect_timeout=5" % (
        cluster.file("patroni", "n%d" % n), cluster.conf["NODE%d_PG_PORT" % n], dbname)


def leader_number(cluster):
    """The leader's node number, or None."""
    leader = ha_state.leader_name(cluster)
    return int(leader[1:]) if leader else None


def here(cluster):
    """(configuration, conninfo) of the PostgreSQL that archives now: the local servers', or the
    leader's; ClusterError when there is none."""
    if cluster.ha:
        n = leader_number(cluster)
        if n is None:
            raise ClusterError("no leader: nothing to back up from")
        return node_config(cluster, n), node_conninfo(cluster, n)
    config = cluster.file("servers", "pgbackrest", "pgbackrest.conf")
    if not os.path.isfile(config):
        raise ClusterError("PostgreSQL here does not archive")
    return config, "host=%s port=%s user=postgres dbname=rocket_rides connect_timeout=5" % (
        cluster.file("servers", "pg"), cluster.conf["PG_PORT"])


def config_here(cluster):
    return here(cluster)[0]


def repo_config(cluster):
    """A configuration that reads the repository, leader or not (every node shares it)."""
    return node_config(cluster, 1) if cluster.ha else config_here(cluster)


def status_lines(cluster):
    """`status`'s backup lines: the last good backup, the archiver, pgbackrest check and the last
    verify's result; or that nothing archives here."""
    try:
        config, conninfo = here(cluster)
    except ClusterError:
        print("backup: no archiving here%s" % (" (no leader)" if cluster.ha else ""), flush=True)
        return
    PgBackRest(config, say).print_status(conninfo, verify_state(cluster))


def run(cluster, command, args):
    """backup DIR [--full|--diff], backups DIR, verify DIR, backup-metrics DIR FILE."""
    if command == "backup":
        PgBackRest(config_here(cluster), say).take_as(args)
    elif command == "backups":
        PgBackRest(repo_config(cluster), say).print_list()
    elif command == "verify":
        if not PgBackRest(repo_config(cluster), say).verify(verify_state(cluster)):
            raise BackupError()
    elif command == "backup-metrics":
        if not args or not args[0]:
            raise ClusterError("backup-metrics needs a FILE")
        config, conninfo = here(cluster)
        PgBackRest(config, say).write_metrics(conninfo, args[0], verify_state(cluster))
    else:
        raise ClusterError("unknown command %s" % command)


COMMANDS = ("backup", "backups", "verify", "backup-metrics")
