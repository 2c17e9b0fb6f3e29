"""`python3 -m rrsuite local-servers COMMAND DIR ...`: scripts/local-servers.sh's backups and restore
of the PostgreSQL it started with --archive (its header says what each does; messages in its voice,
"local-servers: ..." on stderr):

  backup DIR [--full|--diff]       a backup; its line from the list on stdout
  backups DIR                      the list of backups, and the oldest restore point
  restore DIR --to TIME|--latest [--reconcile ENV_FILE] [--bin-dir BIN] [--postgres-only]

The plain shape of scripts/cluster.sh restores its PostgreSQL through restore() here, in this voice,
and reconciles with its own daemons' settings (restore.py)."""

import os
import shutil
import subprocess
import sys

from . import backup, restore_steps
from .backup import BackupError, PgBackRest
from .clusterdir import ClusterError, read_assignments
from .paths import REPO
from .postgres import as_postgres, pg_ctl_start, pg_bin
from .process import HarnessError


def say(message):
    print("local-servers: " + message, file=sys.stderr, flush=True)


class LocalServers:
    """The servers scripts/local-servers.sh started in DIR: its DIR/ports, DIR/pg, and the
    pgBackRest configuration DIR/pgbackrest/pgbackrest.conf when it archives."""

    def __init__(self, directory):
        self.path = os.path.abspath(directory)
        self.data = os.path.join(self.path, "pg")
        self.config = os.path.join(self.path, "pgbackrest", "pgbackrest.conf")
        self.ports = {}

    def load(self):
        if not os.path.isfile(os.path.join(self.path, "ports")):
            raise ClusterError("no servers in %s" % self.path)
        self.ports = read_assignments(os.path.join(self.path, "ports"))
        return self

    def require_archiving(self):
        """Loads DIR/ports, and refuses servers that were not started with --archive."""
        self.load()
        if self.ports.get("ARCHIVE") != "1" or not os.path.isfile(self.config):
            raise ClusterError("PostgreSQL in %s does not archive (start it with --archive)" % self.path)
        return PgBackRest(self.config, say)

    def conninfo(self):
        return "host=%s port=%s user=postgres dbname=rocket_rides connect_timeout=5" % (
            self.data, self.ports["PG_PORT"])

    def database_url(self):
        return "postgresql://postgres@127.0.0.1:%s/rocket_rides" % self.ports["PG_PORT"]

    def pg_options(self):
        """The server's options, from DIR/ports (the same on every start); PG_EXTRA_OPTS from the
        environment after them. pg_ctl hands them to a shell: quoted values may hold spaces."""
        opts = "-p %s -k %s -c listen_addresses=127.0.0.1 -c max_connections=300" % (self.ports["PG_PORT"], self.data)
        if self.ports.get("FAST") == "--fast":
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        if self.ports.get("ARCHIVE") == "1":
            opts += " -c archive_mode=on -c archive_timeout=%s" % (self.ports.get("ARCHIVE_TIMEOUT") or "60")
            opts += ' -c "archive_command=%s"' % backup.archive_command(self.config)
        if os.environ.get("PG_EXTRA_OPTS"):
            opts += " " + os.environ["PG_EXTRA_OPTS"]
        return opts

    def start_postgres(self, seconds):
        """pg_ctl start, waiting up to `seconds` for connections (a restored server takes them once
        its recovery is consistent)."""
        try:
            pg_ctl_start(self.data, os.path.join(self.data, "server.log"), seconds, self.pg_options())
        except HarnessError as error:
            print("rrsuite server postgres-start: %s" % error, file=sys.stderr, flush=True)
            raise BackupError() from None

    def stop_postgres(self):
        """A fast stop, and an immediate one if that did not end it in a minute: the callers (stop,
        and a restore that wipes the data directory next) need the server gone."""
        if not os.path.isfile(os.path.join(self.data, "postmaster.pid")):
            return
        pg_ctl = os.path.join(pg_bin(), "pg_ctl")
        for timeout, mode in (("60", "fast"), ("30", "immediate")):
            if subprocess.run(as_postgres([pg_ctl, "-w", "-t", timeout, "-D", self.data, "-m", mode, "stop"]),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                return

    def postgres_alive(self):
        return restore_steps.postmaster_running(self.data) is not None


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
    pgbackrest = servers.require_archiving()
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
    servers.start_postgres(seconds)
    try:
        restore_steps.wait_promoted(conninfo, seconds, servers.postgres_alive, say)
    except BackupError:
        tail(os.path.join(servers.data, "server.log"), 20)
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


def tail(path, lines):
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace").splitlines()[-lines:]
        sys.stderr.write("".join(line + "\n" for line in text))
        sys.stderr.flush()
    except OSError:
        pass


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
        servers.require_archiving().take_as(args)
    elif command == "backups":
        servers.require_archiving().print_list()
    elif command == "restore":
        to, env_file, bin_dir, postgres_only = parse_restore(args)
        restored = restore(servers, to, env_file, bin_dir, postgres_only)
        print(restored.report(), flush=True)
    else:
        raise BackupError("unknown command %s" % command, exit_code=2)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    try:
        run(argv[0], argv[1], argv[2:])
    except ClusterError as error:
        if str(error):
            say(str(error))
        return getattr(error, "exit_code", 1)
    return 0
