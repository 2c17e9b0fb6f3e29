"""The steps of a point-in-time restore that the local servers (scripts/local-servers.sh restore) and
both shapes of scripts/cluster.sh take around pgBackRest: a data directory wiped and restored to a
target, the wait until PostgreSQL has replayed to it and promoted, the recovery settings taken out
again, writes closed from the restore point less a margin (write_fences), the reconciliation pass
that reopens them, and the two lines a restore prints. Messages through the caller's `say`."""

import datetime
import os
import re
import shutil
import subprocess
import sys
import time

from .backup import BackupError
from .postgres import postmaster_running

RECOVERY_SETTINGS = ("restore_command", "recovery_target_time", "recovery_target_action", "recovery_target_timeline",
                     "recovery_target")


def restore_timeout():
    """RESTORE_TIMEOUT (seconds, default 600): how long PostgreSQL may take to replay the archive."""
    return int(os.environ.get("RESTORE_TIMEOUT") or 600)


def psql(conninfo, sql, quiet=False):
    """psql -c SQL (unaligned, tuples only); its output, or None if it failed (its stderr is ours
    unless quiet)."""
    result = subprocess.run(["psql", "-X", "-At", conninfo, "-c", sql], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if quiet else None)
    return result.stdout.decode(errors="replace").strip() if result.returncode == 0 else None


def empty_directory(path):
    """Everything in `path` removed, the directory kept (its owner and mode are PostgreSQL's); a
    directory that is not there is left so."""
    try:
        entries = os.listdir(path)
    except FileNotFoundError:
        return
    for entry in entries:
        full = os.path.join(path, entry)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            try:
                os.remove(full)
            except OSError:
                pass


def restore_data(pgbackrest, data, target):
    """Wipes `data` and restores into it: to `target` (recovery_target_time, then promote), or to the
    end of the archive when target is "". PostgreSQL must be stopped."""
    say = pgbackrest.say
    how = ["--type=time", "--target=" + target, "--target-action=promote"] if target else ["--type=default"]
    # Wiping the files of a server still running would leave it writing into the restored ones.
    pid = postmaster_running(data)
    if pid is not None:
        say("PostgreSQL (pid %d) still runs on %s: not wiping it" % (pid, data))
        raise BackupError()
    say("wiping %s" % data)
    empty_directory(data)
    say("pgbackrest restore %s" % " ".join(how))
    if not pgbackrest.run("restore", "--target-timeline=latest", *how):
        say("pgbackrest restore failed (its log: %s)" % pgbackrest.log_dir())
        raise BackupError()
    # A socket's lock file in the data directory (where the local servers keep their socket) is a
    # plain file that the backup copied: it names the old postmaster's pid, and a new postmaster
    # refuses to start while any process has that pid.
    for name in os.listdir(data):
        if re.fullmatch(r"\.s\.PGSQL\..*\.lock", name):
            os.remove(os.path.join(data, name))


def wait_promoted(conninfo, seconds, alive, say):
    """Until PostgreSQL has replayed to its target and promoted; fails at once if alive() says it
    exited (a target past the end of the archive ends recovery with a FATAL)."""
    for _ in range(seconds * 5):
        if psql(conninfo, "SELECT pg_is_in_recovery()", quiet=True) == "f":
            return
        if not alive():
            say("PostgreSQL exited during recovery")
            raise BackupError()
        time.sleep(0.2)
    say("PostgreSQL has not finished recovery after %d s" % seconds)
    raise BackupError()


def after_promote(conninfo):
    """The time of the last transaction replayed (RFC 3339 with microseconds; "" if none was); then
    the restore's recovery settings are taken out of postgresql.auto.conf: left there, they would
    apply again the next time this data directory recovers (as a standby after a switchover: it
    would stop at the old target and promote)."""
    restored = psql(conninfo, "SELECT COALESCE(to_char(pg_last_xact_replay_timestamp() AT TIME ZONE 'UTC', "
                              "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), '')") or ""
    for name in RECOVERY_SETTINGS:
        psql(conninfo, "ALTER SYSTEM RESET %s" % name)
    psql(conninfo, "SELECT pg_reload_conf()")
    return restored


def margin_since(moment):
    """`moment` (RFC 3339) less RESTORE_RECONCILE_MARGIN seconds (600), RFC 3339."""
    t = datetime.datetime.fromisoformat(moment.replace("Z", "+00:00"))
    margin = datetime.timedelta(seconds=int(os.environ.get("RESTORE_RECONCILE_MARGIN") or 600))
    return (t - margin).astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Restored:
    """What a restore reached: `time` (the restore point), `since` (where reconciliation starts),
    `replayed` (the last transaction replayed, "" if none) and whether writes were closed."""

    def __init__(self, time, since, replayed):
        self.time, self.since, self.replayed = time, since, replayed
        self.writes_closed = False

    def report(self):
        """What a restore prints on stdout when it is done."""
        return "restored to: %s (last transaction replayed: %s)\nreconcile since: %s" % (
            self.time, self.replayed or "none after the backup", self.since)


def close_writes(conninfo, restored, say):
    """One open write fence (the API answers writes 503 until reconciliation has covered [since,
    now]). A restored schema without the write_fences table (a backup older than the release that
    added it) cannot be fenced: the restore stops there, before any daemon serves writes, and says
    what to do."""
    if psql(conninfo, "SELECT to_regclass('write_fences') IS NOT NULL") != "t":
        say("the restored schema has no write_fences table (a backup older than this release): run "
            "rocket-rides-api migrate, then rocket-rides-api reconcile --since %s, before starting the daemons"
            % restored.since)
        raise BackupError()
    result = subprocess.run(["psql", "-X", "-At", "-q", "-v", "ON_ERROR_STOP=1", conninfo, "-v",
                             "reason=restored to " + restored.time, "-v", "since=" + restored.since],
                            input=b"INSERT INTO write_fences (reason, reconcile_since) VALUES (:'reason', :'since') "
                                  b"RETURNING id;\n", stdout=subprocess.PIPE)
    if result.returncode != 0:
        say("could not close writes (INSERT INTO write_fences failed)")
        raise BackupError()
    restored.writes_closed = True
    say("writes closed (write_fences id %s, reconcile since %s)" % (result.stdout.decode().strip(), restored.since))


def fence_restored(pgbackrest, conninfo, to, replayed):
    """Once the restored PostgreSQL is a primary, before any daemon writes: writes closed from the
    restore point less the margin. The restore point is `to` (--to), else the last transaction
    replayed, else the newest backup's end. Returns the Restored."""
    moment = to or replayed or pgbackrest.newest_backup_end()
    restored = Restored(moment, margin_since(moment), replayed)
    close_writes(conninfo, restored, pgbackrest.say)
    return restored


def env_file_variables(path):
    """The NAME=VALUE pairs of a daemons' environment file (as scripts/env-file.sh writes it, or the
    package's /etc/rocket-rides/rocket-rides.env), one pair of quotes around a value taken off;
    comments and blank lines skipped."""
    pairs = []
    with open(path) as f:
        for line in f.read().splitlines():
            if not re.match(r"[A-Za-z_][A-Za-z_0-9]*=", line):
                continue
            line = re.sub(r"^([^=]*)='(.*)'$", r"\1=\2", line)
            line = re.sub(r'^([^=]*)="(.*)"$', r"\1=\2", line)
            name, _, value = line.partition("=")
            pairs.append((name, value))
    return pairs


def reconcile(api, since, env, say, writes_closed):
    """The reconciliation pass over [since, now] with the daemons' environment `env` (a dict, and
    nothing else), or the command the operator must run. True if the pass ran."""
    by_hand = "run: rocket-rides-api reconcile --since %s (with the daemons' DATABASE_URL and STRIPE_API_BASE)" % since
    if not os.access(api, os.X_OK):
        say("reconcile: %s not found; %s" % (api, by_hand))
        return False
    # Exit 5: another pass (a completer's) holds the lease; it ends within its window's listing.
    for _ in range(60):
        result = subprocess.run([api, "reconcile", "--since", since], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if result.returncode != 5:
            break
        time.sleep(2)
    lines = result.stdout.decode(errors="replace").rstrip("\n").split("\n")
    if result.returncode == 0:
        say("reconcile: %s" % next((line for line in lines if line.startswith("matched=")), lines[-1]))
        for line in lines:
            if not line.startswith("matched="):
                print("    " + line, file=sys.stderr)
        sys.stderr.flush()
        return True
    say("reconcile did not run: %s" % lines[-1])
    say("writes stay closed until it has; %s" % by_hand if writes_closed else by_hand)
    return False
