"""pgBackRest for one PostgreSQL (the local servers, or one Patroni node of the HA shape): its
configuration file, the archive and restore commands PostgreSQL runs, the stanza, backups, the list,
the status lines, verify, the metrics textfile, the check of a restore target and the flush of the
archive before a --latest restore. One copy, so that the plain and the HA shape and the local
servers back up the same way; docs/operations.md, "Backups and restore", says what each step is for.

Each command speaks in its caller's voice (`say`: scripts/cluster.sh's "cluster: ...", or
scripts/local-servers.sh's "local-servers: ..."); the refusals of scripts/backup_info.py (a restore
target no backup reaches) are printed as that script prints them, on a line of their own."""

import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import time

from .clusterdir import ClusterError
from .paths import REPO
from .postgres import as_postgres

# The stanza: pgBackRest's name for this database cluster in the repository.
STANZA = "rocket-rides"


def _load_backup_info():
    # scripts/backup_info.py is also installed on its own (/usr/libexec/rocket-rides, for the backup
    # units), where this package is not: it stays a script, and is imported from there.
    spec = importlib.util.spec_from_file_location("backup_info", os.path.join(REPO, "scripts", "backup_info.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


backup_info = _load_backup_info()


class BackupError(ClusterError):
    """A failure already said in the caller's voice (or a refusal printed as it is); exit_code is
    what the command exits with (2: a usage error)."""

    def __init__(self, message="", exit_code=1):
        super().__init__(message)
        self.exit_code = exit_code


def refused(refusal):
    """backup_info's one-line refusal, printed as the script prints it."""
    print(refusal, file=sys.stderr, flush=True)
    return BackupError()


def write_config(path, repo, pg_path, pg_port, socket_dir, work, writer):
    """pgBackRest's configuration for the PostgreSQL in pg_path (port pg_port, Unix socket in
    socket_dir) and the repository `repo` (created, the postgres user's); spool, log and lock
    directories under `work`. writer: the script named in its first line. Settings
    (docs/operations.md): BACKUP_RETENTION_FULL (2), BACKUP_RETENTION_DIFF (6),
    BACKUP_ARCHIVE_QUEUE_MAX (4GiB), BACKUP_COMPRESS_TYPE (lz4), BACKUP_PROCESS_MAX (2)."""
    for directory in (repo, os.path.join(work, "spool"), os.path.join(work, "log"), os.path.join(work, "lock")):
        os.makedirs(directory, exist_ok=True)
    env = os.environ
    with open(path, "w") as f:
        f.write("""# Written by %(writer)s: pgBackRest for the PostgreSQL in %(pg_path)s.
[global]
# The repository: a local directory here; S3-compatible storage in docs/operations.md.
repo1-path=%(repo)s
# Keep this many full backups (and the WAL they need); older ones expire after each backup.
repo1-retention-full=%(full)s
repo1-retention-diff=%(diff)s
compress-type=%(compress)s
# Files are copied (and synced) by this many processes at once.
process-max=%(processes)s
# PostgreSQL's archive_command returns as soon as the segment is queued in the spool; one
# process pushes several segments at once. The queue cap keeps a repository that is down from
# filling pg_wal: past it, segments are dropped (a gap in the archive, told in the log and by
# the archive metrics) instead of PostgreSQL stopping.
archive-async=y
spool-path=%(work)s/spool
archive-push-queue-max=%(queue)s
archive-timeout=60
# A backup starts with an immediate checkpoint, not a spread one.
start-fast=y
log-path=%(work)s/log
lock-path=%(work)s/lock
log-level-console=warn
log-level-stderr=warn
log-level-file=info

[%(stanza)s]
pg1-path=%(pg_path)s
pg1-port=%(pg_port)s
pg1-socket-path=%(socket_dir)s
pg1-user=postgres
""" % dict(writer=writer, pg_path=pg_path, repo=repo, work=work, stanza=STANZA, pg_port=pg_port,
           socket_dir=socket_dir, full=env.get("BACKUP_RETENTION_FULL") or "2",
           diff=env.get("BACKUP_RETENTION_DIFF") or "6", compress=env.get("BACKUP_COMPRESS_TYPE") or "lz4",
           processes=env.get("BACKUP_PROCESS_MAX") or "2", queue=env.get("BACKUP_ARCHIVE_QUEUE_MAX") or "4GiB"))
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", "postgres:postgres", repo, work, path], check=True)


def archive_command(config):
    return "pgbackrest --config=%s --stanza=%s archive-push %%p" % (config, STANZA)


def patroni_restore_command(config, pg_bin_dir):
    """A Patroni node's restore_command: pgBackRest's archive-get except for the history files a
    crashed leader must not see (deploy/patroni-restore-command)."""
    return '%s/deploy/patroni-restore-command %s %s %%f "%%p"' % (REPO, config, pg_bin_dir)


class PgBackRest:
    """pgBackRest on the stanza through one configuration file, as the postgres user when we are
    root (pgBackRest refuses a repository owned by another user); messages through `say`."""

    def __init__(self, config, say):
        self.config = config
        self.say = say

    def argv(self, *command):
        return as_postgres(["pgbackrest", "--config=" + self.config, "--stanza=" + STANZA] + list(command))

    def run(self, *command):
        """Its output on our stderr (stdout is the command's answer); True if it succeeded."""
        return subprocess.run(self.argv(*command), stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno()).returncode == 0

    def log_dir(self):
        try:
            with open(self.config) as f:
                return next((line[len("log-path="):].strip() for line in f if line.startswith("log-path=")), "")
        except OSError:
            return ""

    def info(self):
        """`pgbackrest info --output=json`, parsed ([] when it printed nothing); its stderr is ours."""
        result = subprocess.run(self.argv("info", "--output=json"), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        text = result.stdout.decode(errors="replace")
        try:
            return json.loads(text) if text.strip() else []
        except json.JSONDecodeError:
            raise refused("backup: pgbackrest info did not print JSON: %s" % text[:200]) from None

    def stanza_create(self):
        if not self.run("stanza-create"):
            self.say("pgbackrest stanza-create failed")
            raise BackupError()

    def take(self, kind):
        """One backup (full, diff or incr); returns its line from the list."""
        started = int(time.time())
        self.say("taking a %s backup" % kind)
        if not self.run("backup", "--type=" + kind):
            self.say("the %s backup failed (its log: %s)" % (kind, self.log_dir()))
            raise BackupError()
        self.say("%s backup done in %d s" % (kind, int(time.time()) - started))
        listing = io.StringIO()
        with contextlib.redirect_stdout(listing):
            backup_info.command_list(self.info())
        labelled = [line for line in listing.getvalue().splitlines() if re.match(r"[0-9]{8}-", line)]
        return labelled[-1] if labelled else ""

    def take_as(self, options):
        """take() with the kind an operator command was given (diff when none); an unknown option
        fails in one line, exit 2."""
        kinds = {"--full": "full", "--diff": "diff", "": "diff", "--incr": "incr"}
        option = options[0] if options else ""
        if option not in kinds:
            self.say("backup: unknown option %s (--full or --diff)" % option)
            raise BackupError(exit_code=2)
        print(self.take(kinds[option]), flush=True)

    def print_list(self):
        backup_info.command_list(self.info())
        sys.stdout.flush()

    def print_status(self, conninfo, verify_state=None):
        """The last good backup, the archiver, pgbackrest check, and the last pgbackrest verify's
        result (read from its state file, not run: a verify reads every file of the repository)."""
        backup_info.command_status(self.info())
        result = subprocess.run(["psql", "-X", "-At", "-F", " ", conninfo, "-c", ARCHIVER_SQL],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True)
        fields = result.stdout.split() if result.returncode == 0 else []
        if len(fields) >= 5:
            print("archive: archived=%s last=%s at %s failed=%s last_failure=%s" % tuple(fields[:5]))
        else:
            print("archive: PostgreSQL does not answer")
        # check: the stanza matches PostgreSQL, and a forced WAL switch reaches the repository.
        # Bounded at 10 s (not the configuration's 60): status is polled by scripts and tests while
        # the cluster changes leaders.
        check = subprocess.run(self.argv("check", "--archive-timeout=10"), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if check.returncode == 0:
            print("check: ok (a WAL switch reached the repository)")
        else:
            lines = check.stdout.decode(errors="replace").rstrip("\n").split("\n")
            print("check: FAILED: %s" % next((line for line in lines if re.search("ERROR|error", line)), lines[0]))
        if verify_state:
            print(backup_info.verify_line(backup_info.read_verify_state(verify_state)))
        sys.stdout.flush()

    def verify(self, state):
        """pgbackrest verify over the whole repository and a look for segments missing inside a
        timeline of the archive; one line, the result recorded in `state`; False if damaged."""
        ok = backup_info.command_verify(STANZA, self.config, state) == 0
        sys.stdout.flush()
        return ok

    def write_metrics(self, conninfo, textfile, verify_state=None):
        """The node-exporter textfile of the backup and archive metrics."""
        backup_info.write_metrics(backup_info.run_info(STANZA, self.config), textfile,
                                  backup_info.run_archiver(conninfo),
                                  backup_info.read_verify_state(verify_state) if verify_state else None)

    def check_restore_target(self, to):
        """Before anything stops: with `to` (RFC 3339) the target as recovery_target_time, without
        it (--latest) ""; one line and BackupError when no backup reaches `to`, or there is none."""
        info = self.info()
        if to:
            target = io.StringIO()
            try:
                with contextlib.redirect_stdout(target):
                    backup_info.command_target(info, to)
            except backup_info.Refused as refusal:
                raise refused(refusal) from None
            return target.getvalue().strip()
        if not backup_info.backups(info):
            self.say("restore: there is no backup to restore from (take one with backup --full)")
            raise BackupError()
        return ""

    def newest_backup_end(self):
        rows = backup_info.backups(self.info())
        return backup_info.rfc3339(rows[-1]["timestamp"]["stop"]) if rows else ""

    def flush(self):
        """A WAL switch that returns once the segment is in the repository, so that --latest
        restores every commit made so far; False (said) if it could not."""
        if self.run("check"):
            return True
        self.say("could not flush the archive (pgbackrest check failed)")
        return False


ARCHIVER_SQL = """SELECT archived_count, COALESCE(last_archived_wal, 'none'),
    COALESCE(to_char(last_archived_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'never'),
    failed_count, COALESCE(to_char(last_failed_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'never')
    FROM pg_stat_archiver"""
