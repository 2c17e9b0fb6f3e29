#!/usr/bin/env python3
"""Reads pgBackRest's `info --output=json` for tools/rrsuite/backup.py (which imports this file), the
operator commands and the backup timer: the list of backups with the oldest point a restore can
reach, the check of a restore target against it, and the node-exporter textfile of the backup and
archiving metrics.

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
                                            rocket-rides-backup-metrics.service;
                                            --verify-state FILE adds the last verify's result
  backup_info.py verify --state FILE [--stanza S] [--config FILE]
                                            runs `pgbackrest verify` (every backup's and
                                            archived segment's files against their checksums)
                                            and looks for segments missing inside a timeline
                                            of the archive, prints one line and records the
                                            result in FILE (JSON, atomically); exit 1 if bad
  backup_info.py verify-status --state FILE one line: the last verify's result and time

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


class Refused(Exception):
    """A one-line refusal (a target no backup reaches, output that is not pgBackRest's JSON): the
    command line prints it as it is and exits 1; tools/rrsuite/backup.py, which imports this file,
    prints it the same way."""


def fail(message):
    raise Refused(message)


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
# The times are cut to the second (floor): a cast alone rounds, and put a push in the last half
# second a second into the future.
ARCHIVER_SQL = """SELECT COALESCE(floor(extract(epoch FROM last_archived_time))::bigint, 0) || '|' ||
    COALESCE(floor(extract(epoch FROM last_failed_time))::bigint, 0) || '|' ||
    (SELECT count(*) FROM pg_ls_dir('pg_wal/archive_status') AS f WHERE f LIKE '%.ready')
    FROM pg_stat_archiver"""


def as_postgres(argv):
    # pgBackRest refuses to touch a repository owned by another user.
    return (["runuser", "-u", "postgres", "--"] + argv) if os.geteuid() == 0 else argv


def pgbackrest_argv(stanza, config, *command):
    """pgbackrest on STANZA (through CONFIG, or pgBackRest's default configuration), running COMMAND,
    as the repository's owner."""
    return as_postgres(["pgbackrest", "--stanza=" + stanza] + (["--config=" + config] if config else []) +
                       list(command))


def run_info(stanza, config):
    result = subprocess.run(pgbackrest_argv(stanza, config, "info", "--output=json"), capture_output=True, text=True,
                            timeout=120)
    if result.returncode != 0:
        # The textfile still says when it was written and what the archiver did; the backup
        # series read 0, which the age alert takes for "no backup".
        print("backup metrics: pgbackrest info failed: %s" % result.stderr.strip()[:300], file=sys.stderr)
        return []
    return json.loads(result.stdout)


def write_atomically(path, text, mode=0o644):
    # Readers (node_exporter, `status`) may read at any moment: a whole file or the previous one.
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".rocket-rides.")
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.chmod(temporary, mode)
    os.rename(temporary, path)


def verify_report(output):
    """(problem, summary) from `pgbackrest verify --output=text --verbose`: problem is what it found
    wrong in one line, or None for a sound repository; summary what it checked. Its exit status is
    0 either way (2.45), and without --verbose a sound repository prints nothing, so the report is
    what tells:

        stanza: rocket-rides
        status: error
          archiveId: 15-1, total WAL checked: 7, total valid WAL: 7
            missing: 0, checksum invalid: 0, size invalid: 0, other: 0
          backup: 20261127-205406F, status: invalid, total files checked: 1354, total valid files: 1353
            missing: 0, checksum invalid: 1, size invalid: 0, other: 0
    """
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    errors = [line.strip() for line in lines if line.strip().startswith(("ERROR", "WARN"))]
    if errors:
        return errors[0], ""
    status = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("status:")), None)
    blocks = []  # [name, faulty, [non-zero counts]]
    for line in lines:
        if line.startswith("    ") and blocks:
            counts = [part.strip() for part in line.split(",") if not part.strip().endswith(": 0")]
            blocks[-1][2] += counts
            blocks[-1][1] = blocks[-1][1] or bool(counts)
        elif line.startswith("  "):
            parts = [part.strip() for part in line.strip().split(",")]
            blocks.append([parts[0], any(part == "status: invalid" for part in parts), []])
    backups = sum(1 for name, _, _ in blocks if name.startswith("backup:"))
    summary = "%d backup%s and the archive checked" % (backups, "" if backups == 1 else "s")
    faults = ["%s%s" % (name, " (%s)" % ", ".join(counts) if counts else " invalid")
              for name, faulty, counts in blocks if faulty]
    if status == "ok" and not faults:
        return None, summary
    if status is None:
        return "pgbackrest verify printed no report%s" % (": " + lines[0][:200] if lines else ""), ""
    return "status %s: %s" % (status, "; ".join(faults) or "no detail"), summary


def archive_gaps(paths):
    """Segments missing inside each timeline of the archive, from repo-ls's paths: within one
    timeline, every segment from its first archived one to its last must be there (16 MB
    segments: 256 per log file). A segment dropped past archive-push-queue-max leaves exactly
    such a hole, and no restore can cross it; pgBackRest 2.45's verify does not report one."""
    def segment_name(timeline, number):
        return "%08X%08X%08X" % (timeline, number // 256, number % 256)

    by_timeline = {}
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        if len(name) < 24 or "." in name[:24] or not all(c in "0123456789ABCDEF" for c in name[:24]):
            continue
        if len(name) > 24 and name[24] != "-":  # a .backup or .partial file, not a segment
            continue
        timeline, log, segment = int(name[:8], 16), int(name[8:16], 16), int(name[16:24], 16)
        by_timeline.setdefault(timeline, set()).add(log * 256 + segment)
    gaps = []
    for timeline, numbers in sorted(by_timeline.items()):
        ordered = sorted(numbers)
        for before, after in zip(ordered, ordered[1:]):
            if after - before > 1:
                first, last = before + 1, after - 1
                missing = segment_name(timeline, first)
                if last != first:
                    missing += ".." + segment_name(timeline, last)
                gaps.append("timeline %d misses %s" % (timeline, missing))
    return gaps


def run_archive_listing(stanza, config):
    result = subprocess.run(pgbackrest_argv(stanza, config, "repo-ls", "--recurse", "--output=json", "archive/" + stanza),
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise OSError("pgbackrest repo-ls exited %d: %s" % (result.returncode, result.stderr.strip()[:300]))
    return json.loads(result.stdout)


def command_verify(stanza, config, state_path):
    started = datetime.datetime.now(UTC)
    try:
        result = subprocess.run(pgbackrest_argv(stanza, config, "verify", "--output=text", "--verbose"),
                                capture_output=True, text=True, timeout=12 * 3600)
        output = (result.stdout + "\n" + result.stderr).strip()
        problem, summary = verify_report(output)
        if problem is None and result.returncode != 0:
            problem = "pgbackrest verify exited %d: %s" % (result.returncode, (output.splitlines() or [""])[0])
        problems = [problem] if problem else []
        problems += ["WAL gap: " + gap for gap in archive_gaps(run_archive_listing(stanza, config))]
        problem = "; ".join(problems) or None
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        problem, summary = "pgbackrest verify did not run: %s" % error, ""
    state = {"time": int(started.timestamp()), "ok": problem is None,
             "seconds": round((datetime.datetime.now(UTC) - started).total_seconds(), 1),
             "detail": problem or "%s: every file matches its checksum, no segment missing inside a timeline" % summary}
    write_atomically(state_path, json.dumps(state) + "\n")
    print(verify_line(state))
    return 0 if state["ok"] else 1


def read_verify_state(state_path):
    try:
        with open(state_path) as handle:
            state = json.load(handle)
        return state if isinstance(state, dict) and "time" in state and "ok" in state else None
    except (OSError, ValueError):
        return None


def verify_line(state):
    if state is None:
        return "verify: never run (scripts/cluster.sh verify DIR, or rocket-rides-backup.service on Sundays)"
    return "verify: %s at %s (%ss): %s" % ("ok" if state["ok"] else "FAILED", rfc3339(state["time"]),
                                           state.get("seconds", "?"), state.get("detail", ""))


def run_archiver(conninfo):
    result = subprocess.run(["psql", "-X", "-At", conninfo, "-c", ARCHIVER_SQL], capture_output=True, text=True,
                            timeout=30)
    if result.returncode != 0:
        print("backup metrics: pg_stat_archiver unreadable: %s" % result.stderr.strip()[:300], file=sys.stderr)
        return ""
    return result.stdout.strip()


def write_metrics(info, path, archiver, verify_state=None):
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
    gauge("rocket_rides_backup_last_verify_timestamp_seconds",
          "Unix time at which the last pgbackrest verify started (0: never).",
          verify_state["time"] if verify_state else 0)
    gauge("rocket_rides_backup_verify_ok",
          "1 if the last pgbackrest verify found every backup and the archive intact, else 0.",
          1 if verify_state and verify_state["ok"] else 0)
    gauge("rocket_rides_backup_metrics_timestamp_seconds", "Unix time this file was written.",
          int(datetime.datetime.now(UTC).timestamp()))
    write_atomically(path, "\n".join(lines) + "\n")
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
    metrics.add_argument("--verify-state", default="")
    verify = sub.add_parser("verify")
    verify.add_argument("--state", required=True)
    verify.add_argument("--stanza", default="rocket-rides")
    verify.add_argument("--config", default="")
    verify_status = sub.add_parser("verify-status")
    verify_status.add_argument("--state", required=True)
    args = parser.parse_args()
    if args.command == "metrics":
        return write_metrics(run_info(args.stanza, args.config), args.textfile, run_archiver(args.conninfo),
                             read_verify_state(args.verify_state) if args.verify_state else None)
    if args.command == "verify":
        return command_verify(args.stanza, args.config, args.state)
    if args.command == "verify-status":
        print(verify_line(read_verify_state(args.state)))
        return 0
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
    try:
        sys.exit(main())
    except Refused as refusal:
        print(refusal, file=sys.stderr)
        sys.exit(1)
