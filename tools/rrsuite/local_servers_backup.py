"""scripts/local-servers.sh's backups and restore of the PostgreSQL it started with --archive
(`python3 -m rrsuite local-servers COMMAND DIR ...`, local_servers_cli.py; the script's header says
what each does; messages in its voice, "local-servers: ..." on stderr):

  backup DIR [--full|--diff]       a backup; its line from the list on stdout
  backups DIR                      the list of backups, and the oldest restore point
  restore DIR --to TIME|--latest [--reconcile ENV_FILE] [--bin-dir BIN] [--postgres-only]

The plain shape of scripts/cluster.sh restores its PostgreSQL through restore() here, in this voice,
and reconciles with its own daemons' settings (cluster_restore.py)."""

import os
import shutil
import sys

from . import restore_steps
from .backup import BackupError, PgBackRest
from .clusterdir import ClusterError
from .local_servers_dir import LocalServers
from .paths import REPO
from .process import HarnessError, print_tail


def say(message):
    print("local-servers: " + message, file=sys.stderr, flush=True)


def require_archiving(servers):
    """Loads DIR/ports, and refuses servers that were not started with --archive."""
    servers.load()
    if not servers.archives():
        raise ClusterError("PostgreSQL in %s does not archive (start it with --archive)" % servers.path)
    return PgBackRest(servers.config, say)


def api_binary(bin_dir):
    if bin_dir:
        return os.path.join(bin_dir, "rocket-rides-api")
    built = os.path.join(REPO, "build", "bin", "rocket-rides-api")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("rocket-rides-api") or "rocket-rides-api"


def restore(servers, to, env_file="", bin_dir="", postgres_only=False):
    """PostgreSQL restored to `to` (RFC 3339), or to everything archived when to is "", writes
    closed; then (unless postgres_only) the reconciliation pass from the daemons' environment file,
    or the command to run, and a full backup. Returns the Restored; prints nothing on stdout."""
    pgbackrest = require_archiving(servers)
    conninfo = servers.conninfo()
    # Before anything stops: a target no backup reaches fails here, in one line.
    target = pgbackrest.check_restore_target(to)
    if not to and servers.postgres_alive():
        # PostgreSQL still runs: what it has not archived yet goes to the repository first.
        if not pgbackrest.flush():
            say("WARNING: restoring what the archive holds; later commits are lost")
    say("stopping PostgreSQL")
    servers.stop_postgres()
    restore_steps.restore_data(pgbackrest, servers.data, target)
    say("starting PostgreSQL: it replays the archive%s and promotes" % (" to " + to if to else ""))
    seconds = restore_steps.restore_timeout()
    try:
        servers.start_postgres(seconds)
    except HarnessError as error:
        print("rrsuite server postgres-start: %s" % error, file=sys.stderr, flush=True)
        raise BackupError() from None
    try:
        restore_steps.wait_promoted(conninfo, seconds, servers.postgres_alive, say)
    except BackupError:
        print_tail(os.path.join(servers.data, "server.log"), 20)
        raise
    restored = restore_steps.fence_restored(pgbackrest, conninfo, to, restore_steps.after_promote(conninfo))
    if postgres_only:
        return restored
    if env_file:
        variables = dict(restore_steps.env_file_variables(env_file))
        if not variables.get("DATABASE_URL"):
            variables["DATABASE_URL"] = servers.database_url()
        env = dict({"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}, **variables)
        restore_steps.reconcile(api_binary(bin_dir), restored.since, env, say, restored.writes_closed)
    else:
        say("writes stay closed until: rocket-rides-api reconcile --since %s (with the daemons' settings)"
            % restored.since)
    # The backups taken before the restore are of another history past the restore point: a later
    # restore starts from this one.
    pgbackrest.take("full")
    return restored


def parse_restore(args):
    """restore's options: (to, env_file, bin_dir, postgres_only); a usage error exits 2."""
    to = env_file = bin_dir = ""
    latest = postgres_only = False
    needs = {"--to": "a time (RFC 3339, e.g. 2026-11-27T12:00:00Z)", "--reconcile": "an environment file",
             "--bin-dir": "a directory"}
    while args:
        option = args[0]
        if option in needs:
            if len(args) < 2 or not args[1]:
                # exit 1, as bash's ${2:?} did
                raise BackupError("restore: %s needs %s" % (option, needs[option]))
            value, args = args[1], args[2:]
            if option == "--to":
                to = value
            elif option == "--reconcile":
                env_file = value
            else:
                bin_dir = value
        elif option in ("--latest", "--postgres-only"):
            latest, postgres_only = latest or option == "--latest", postgres_only or option == "--postgres-only"
            args = args[1:]
        else:
            raise BackupError("restore: unknown option %s" % option, exit_code=2)
    if bool(to) == latest:
        raise BackupError("restore: say --to TIME or --latest", exit_code=2)
    if env_file and not os.access(env_file, os.R_OK):
        raise BackupError("restore: cannot read %s" % env_file, exit_code=2)
    return to, env_file, bin_dir, postgres_only


def run(command, directory, args):
    servers = LocalServers(directory)
    if command == "backup":
        require_archiving(servers).take_as(args)
    elif command == "backups":
        require_archiving(servers).print_list()
    elif command == "restore":
        to, env_file, bin_dir, postgres_only = parse_restore(args)
        restored = restore(servers, to, env_file, bin_dir, postgres_only)
        print(restored.report(), flush=True)
    else:
        raise BackupError("unknown command %s" % command, exit_code=2)
