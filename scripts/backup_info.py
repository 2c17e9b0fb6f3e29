#!/usr/bin/env python3
"""Reads pgBackRest's `info --output=json` for scripts/backup-site.sh, the operator commands and the
backup timer: the list of backups with the oldest point a restore can reach, the check of a restore
target against it, and the node-exporter textfile of the backup and archiving metrics.

  backup_info.py list   < info.json         one line per backup, then the restore window
  backup_info.py oldest < info.json         the oldest restore point, RFC 3339 (exit 1: no backup)
  backup_info.py newest < info.json         the newest backup's stop time, RFC 3339 (exit 1: none)
  backup_info.py target TIME < info.json    TIME as PostgreSQL's recovery_target_time takes it;
                                            exit 1 with one line if a restore cannot reach it
  backup_info.py status < info.json         one line: the last good backup and the window
  backup_info.py metrics --textfile PATH [--stanza S] [--config FILE] [--conninfo C]
                                            runs `pgbackrest info` (as postgres when root) and
                                            reads pg_stat_archiver through C, then writes PATH
                                            atomically (rename): the node-exporter textfile of
                                            scripts/cluster.sh backup-metrics and of
                                            rocket-rides-backup-metrics.service

Times on the command line are RFC 3339 (2026-11-27T12:00:00Z, fractions and offsets allowed).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

UTC = datetime.timezone.utc


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def rfc3339(epoch):
    return datetime.datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text):
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        fail("restore: %r is not an RFC 3339 time (e.g. 2026-11-27T12:00:00Z)" % text)
    if moment.tzinfo is None or "T" not in text.upper():
        fail("restore: %r is not an RFC 3339 time with its offset (e.g. 2026-11-27T12:00:00Z)" % text)
    return moment.astimezone(UTC)


def backups(info):
    """The stanza's backups, oldest first (pgBackRest lists only backups that completed)."""
    if not info:
        return []
    return sorted(info[0].get("backup", []), key=lambda b: b["timestamp"]["stop"])


def oldest_restore_point(rows):
    # pgBackRest records the stop time in whole seconds; the backup may have become consistent up
    # to a second later, and a target before that point cannot be reached.
    return rows[0]["timestamp"]["stop"] + 1


def stanza_status(info):
    if not info:
        return "no stanza"
    status = info[0].get("status", {})
    return "%s (%s)" % (status.get("message", "unknown"), status.get("code"))


def read_info():
    text = sys.stdin.read()
    try:
        return json.loads(text) if text.strip() else []
    except json.JSONDecodeError:
        fail("backup: pgbackrest info did not print JSON: %s" % text[:200])


def human_bytes(count):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return ("%d %s" % (count, unit)) if unit == "B" else ("%.1f %s" % (count, unit))
        count /= 1024.0
    return str(count)


def command_list(info):
    rows = backups(info)
    if not rows:
        print("no backup yet (stanza: %s); take one: scripts/cluster.sh backup DIR --full" % stanza_status(info))
        return 0
    for b in rows:
        ts = b["timestamp"]
        print("%s %s started=%s stopped=%s took=%ds size=%s repo=%s wal=%s..%s%s" % (
            b["label"], b["type"], rfc3339(ts["start"]), rfc3339(ts["stop"]), ts["stop"] - ts["start"],
            human_bytes(b["info"]["size"]), human_bytes(b["info"]["repository"]["size"]),
            b["archive"]["start"], b["archive"]["stop"],
            (" based on " + b["prior"]) if b.get("prior") else ""))
    archive = (info[0].get("archive") or [{}])[-1]
    print("oldest restore point: %s (restore --to any later time, or --latest)" % rfc3339(oldest_restore_point(rows)))
    print("archived WAL: %s..%s" % (archive.get("min", "none"), archive.get("max", "none")))
    return 0


def command_status(info):
    rows = backups(info)
    if not rows:
        print("backup: none yet (stanza: %s)" % stanza_status(info))
        return 0
    last = rows[-1]
    fulls = [b for b in rows if b["type"] == "full"]
    print("backup: last %s %s at %s (%s), last full %s, oldest restore point %s, %d in the repository" % (
        last["type"], last["label"], rfc3339(last["timestamp"]["stop"]), human_bytes(last["info"]["size"]),
        rfc3339(fulls[-1]["timestamp"]["stop"]) if fulls else "none",
        rfc3339(oldest_restore_point(rows)), len(rows)))
    return 0


def command_target(info, text):
    target = parse_rfc3339(text)
    rows = backups(info)
    if not rows:
        fail("restore: there is no backup to restore from (take one: scripts/cluster.sh backup DIR --full)")
    oldest = oldest_restore_point(rows)
    if target.timestamp() < oldest:
        fail("restore: %s is before the oldest restore point %s (the end of the oldest backup, %s)" % (
            rfc3339(target.timestamp()), rfc3339(oldest), rows[0]["label"]))
    if target > datetime.datetime.now(UTC):
        fail("restore: %s is in the future (use --latest for everything archived)" % rfc3339(target.timestamp()))
    # The form pgBackRest parses to pick the backup set (a 'T' or 'Z' makes it fall back to the
    # newest set) and PostgreSQL takes as recovery_target_time.
    print(target.strftime("%Y-%m-%d %H:%M:%S.%f+00"))
    return 0


# The archiver's state as "pushed|failed|pending": Unix times of the last archived segment and
# the last failure, and the segments waiting in pg_wal (needs a superuser, or pg_ls_dir granted).
ARCHIVER_SQL = """SELECT COALESCE(extract(epoch FROM last_archived_time)::bigint, 0) || '|' ||
    COALESCE(extract(epoch FROM last_failed_time)::bigint, 0) || '|' ||
    (SELECT count(*) FROM pg_ls_dir('pg_wal/archive_status') AS f WHERE f LIKE '%.ready')
    FROM pg_stat_archiver"""


def as_postgres(argv):
    # pgBackRest refuses to touch a repository owned by another user.
    return (["runuser", "-u", "postgres", "--"] + argv) if os.geteuid() == 0 else argv


def run_info(stanza, config):
    argv = ["pgbackrest", "--stanza=" + stanza] + (["--config=" + config] if config else []) + ["info", "--output=json"]
    result = subprocess.run(as_postgres(argv), capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        # The textfile still says when it was written and what the archiver did; the backup
        # series read 0, which the age alert takes for "no backup".
        print("backup metrics: pgbackrest info failed: %s" % result.stderr.strip()[:300], file=sys.stderr)
        return []
    return json.loads(result.stdout)


def run_archiver(conninfo):
    result = subprocess.run(["psql", "-X", "-At", conninfo, "-c", ARCHIVER_SQL], capture_output=True, text=True,
                            timeout=30)
    if result.returncode != 0:
        print("backup metrics: pg_stat_archiver unreadable: %s" % result.stderr.strip()[:300], file=sys.stderr)
        return ""
    return result.stdout.strip()


def write_metrics(info, path, archiver):
    rows = backups(info)
    lines = []

    def gauge(name, help_text, value, labels=""):
        lines.append("# HELP %s %s" % (name, help_text))
        lines.append("# TYPE %s gauge" % name)
        lines.append("%s%s %s" % (name, labels, value))

    # Names as the alert rules (deploy/prometheus-alerts.yml) use them.
    gauge("rocket_rides_backup_last_success_timestamp_seconds",
          "Unix time at which the newest backup in the repository completed (0: none).",
          rows[-1]["timestamp"]["stop"] if rows else 0)
    fulls = [b for b in rows if b["type"] == "full"]
    gauge("rocket_rides_backup_last_full_timestamp_seconds",
          "Unix time at which the newest full backup completed (0: none).",
          fulls[-1]["timestamp"]["stop"] if fulls else 0)
    gauge("rocket_rides_backup_oldest_restore_point_timestamp_seconds",
          "The oldest time a point-in-time restore can reach (the end of the oldest backup; 0: none).",
          oldest_restore_point(rows) if rows else 0)
    gauge("rocket_rides_backup_last_size_bytes", "Database size in the newest backup.",
          rows[-1]["info"]["size"] if rows else 0)
    gauge("rocket_rides_backup_count", "Backups in the repository.", len(rows))
    if archiver:
        pushed, failed, pending = (archiver.split("|") + ["", "", ""])[:3]
        gauge("rocket_rides_archive_last_push_timestamp_seconds",
              "Unix time of the last WAL segment PostgreSQL archived (pg_stat_archiver; 0: none yet).",
              pushed or 0)
        gauge("rocket_rides_archive_last_failure_timestamp_seconds",
              "Unix time of the last failed archive_command (pg_stat_archiver; 0: never).", failed or 0)
        gauge("rocket_rides_archive_pending_segments",
              "WAL segments ready to archive and not archived yet (pg_wal/archive_status/*.ready).",
              pending or 0)
    gauge("rocket_rides_backup_metrics_timestamp_seconds", "Unix time this file was written.",
          int(datetime.datetime.now(UTC).timestamp()))
    directory = os.path.dirname(os.path.abspath(path))
    # node_exporter may read at any moment: a whole file or the previous one, never half of one.
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".backup-metrics.")
    with os.fdopen(handle, "w") as out:
        out.write("\n".join(lines) + "\n")
    os.chmod(temporary, 0o644)
    os.rename(temporary, path)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("list", "oldest", "newest", "status"):
        sub.add_parser(name)
    target = sub.add_parser("target")
    target.add_argument("time")
    metrics = sub.add_parser("metrics")
    metrics.add_argument("--textfile", required=True)
    metrics.add_argument("--stanza", default="rocket-rides")
    metrics.add_argument("--config", default="")
    metrics.add_argument("--conninfo", default="dbname=postgres")
    args = parser.parse_args()
    if args.command == "metrics":
        return write_metrics(run_info(args.stanza, args.config), args.textfile, run_archiver(args.conninfo))
    info = read_info()
    if args.command == "list":
        return command_list(info)
    if args.command == "status":
        return command_status(info)
    if args.command in ("oldest", "newest"):
        rows = backups(info)
        if not rows:
            return 1
        print(rfc3339(oldest_restore_point(rows) if args.command == "oldest" else rows[-1]["timestamp"]["stop"]))
        return 0
    if args.command == "target":
        return command_target(info, args.time)


if __name__ == "__main__":
    sys.exit(main())
