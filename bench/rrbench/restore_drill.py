"""bench/restore_drill.sh: the restore drill, timed, on the plain production shape
(scripts/cluster.sh, started through tools/rrsuite's cluster.py: durable PostgreSQL archiving
through pgBackRest, PgBouncer, two APIs, the daemons):
  1. DRILL_ROWS rows of about 200 bytes (default 400000, about 100 MB of table and index);
  2. a full backup (its time, the database's size and the repository's), then a diff backup
     after DRILL_ROWS/10 more rows;
  3. restore --to a time noted between two commits (the command's time, from the first stop to
     the daemons serving again, the full backup after it excluded);
  4. what restore --latest loses when PostgreSQL dies without a flush: one commit every 50 ms
     for DRILL_WRITE_SECONDS (default 75: longer than ARCHIVE_TIMEOUT), kill -9 of PostgreSQL,
     restore --latest; the seconds and rows between the last acknowledged commit and the last
     restored one.
During each restore a prober books a ride every 250 ms through HAProxy: writes_closed_ms is the
time from the first answer that is not a 201 (the restore stopping the daemons, or the kill) to
the first 201 after it (writes reopened: the restore's reconciliation pass has run and the APIs
saw the fence lifted), as a client sees it; beside it, how far into the restore its own
reconciliation pass ended, and what it did. Prints one line per figure and a summary line;
docs/operations.md quotes them.

  bench/restore_drill.sh [--bin-dir BIN]      (default build/bin; ARCHIVE_TIMEOUT=N to vary)"""

import contextlib
import datetime
import json
import os
import re
import signal
import subprocess
import tempfile
import time

from .probe import RideProbe, records as probe_records
from .base import BenchError, env_int, psql_value, read, warn
from rrsuite import cluster, postgres
from rrsuite.paths import CLUSTER, REPO


def note(text):
    warn("[restore_drill %s] %s" % (time.strftime("%H:%M:%S"), text))


def figure(text):
    print(text, flush=True)


def ms_since(t):
    return int((time.monotonic() - t) * 1000)


def closed_figure(name, probe_path, log_path):
    """The writes-closed span from the prober's file, the reconciliation pass from the restore's log."""
    span, start = None, None
    for sent, _, status in probe_records(read(probe_path)):
        ms = int(sent * 1000)
        if status != 201 and start is None:
            start = ms
        elif start is not None and status == 201:
            span = ms - start
            break
    passes = re.findall(r"^cluster: \[\+(\d+) s\] reconcile: (matched=.*)$", read(log_path), re.M)
    reconcile = "%s s into the restore: %s" % passes[-1] if passes else "no pass logged"
    figure("%s_writes_closed_ms=%s (reconcile: %s)" % (name, span if span is not None else "never reopened",
                                                       reconcile))


def backup_after(log_path):
    found = re.findall(r"^cluster: .*full backup done in (\d+) s$", read(log_path), re.M)
    return int(found[-1]) if found else None


def main(argv):
    bin_dir = os.path.join(REPO, "build", "bin")
    args = list(argv)
    while args:
        if args[0] == "--bin-dir" and len(args) > 1:
            bin_dir = args[1]
            del args[:2]
        else:
            raise BenchError("usage: bench/restore_drill.sh [--bin-dir BIN]", 2)
    rows = env_int("DRILL_ROWS", 400000)
    write_seconds = env_int("DRILL_WRITE_SECONDS", 75)
    archive_timeout = os.environ.get("ARCHIVE_TIMEOUT") or "60"
    d = tempfile.mkdtemp(prefix="rr-restore-drill.", dir="/tmp")
    logs = os.path.join(d, "logs")

    def restore(args, name):
        with open(os.path.join(logs, name + ".out"), "wb") as out, open(os.path.join(logs, name + ".log"), "wb") as err:
            code = subprocess.run([CLUSTER, "restore", d] + args, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=err).returncode
        if code != 0:
            raise BenchError("cluster.sh restore %s failed (exit %d; log: %s)" % (" ".join(args), code, name))

    def timed_restore(args, name, prober):
        """restore ARGS (name: to or latest) under the prober; prints its figures."""
        t = time.monotonic()
        restore(args, "drill-restore-" + name)
        total = ms_since(t)
        prober.stop()
        log = os.path.join(logs, "drill-restore-%s.log" % name)
        closed_figure("restore_" + name, os.path.join(d, "probe-" + name), log)
        after = backup_after(log)
        figure("restore_%s_ms=%d (the full backup after it: %s s more)" % (
            name, total - (after or 0) * 1000, after if after is not None else "?"))

    def backup(kind):
        with open(os.path.join(logs, "drill.log"), "ab") as err:
            if subprocess.run([CLUSTER, "backup", d, kind], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=err).returncode != 0:
                raise BenchError("cluster.sh backup %s failed (log: %s/drill.log)" % (kind, logs))

    with contextlib.ExitStack() as stack:
        stack.callback(subprocess.run, ["rm", "-rf", d])
        stack.callback(cluster.stop, d)
        note("starting the cluster (ARCHIVE_TIMEOUT=%s)" % archive_timeout)
        exports = cluster.start(d, bin_dir, dict(os.environ))
        url, api_url, token = exports["DIRECT_DATABASE_URL"], exports["API_URL"], exports["ROCKET_RIDES_TOKEN"]

        def sql(text):
            return psql_value(url, text)
        sql("CREATE TABLE drill (id bigint PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT clock_timestamp(), "
            "payload text NOT NULL)")
        note("writing %d rows" % rows)
        sql("INSERT INTO drill (id, payload) SELECT g, repeat(md5(g::text), 5) FROM generate_series(1, %d) g" % rows)
        figure("database_size_bytes=%s" % sql("SELECT pg_database_size('rocket_rides')"))

        t = time.monotonic()
        backup("--full")
        figure("full_backup_ms=%d" % ms_since(t))
        sql("INSERT INTO drill (id, payload) SELECT g, repeat(md5(g::text), 5) "
            "FROM generate_series(%d + 1, %d + %d / 10) g" % (rows, rows, rows))
        t = time.monotonic()
        backup("--diff")
        figure("diff_backup_ms=%d" % ms_since(t))
        info = subprocess.run(postgres.as_postgres(["pgbackrest", "--config=%s/servers/pgbackrest/pgbackrest.conf" % d,
                                                    "--stanza=rocket-rides", "info", "--output=json"]),
                              stdout=subprocess.PIPE, check=True).stdout
        for b in json.loads(info)[0]["backup"]:
            # size: the database as restored from this backup; delta: what this backup copied; the
            # repository's figures are the same after compression.
            i, kind = b["info"], b["type"]
            figure("%s_backup_size_bytes=%d %s_backup_copied_bytes=%d %s_backup_repository_bytes=%d "
                   "%s_backup_repository_copied_bytes=%d" % (kind, i["size"], kind, i["delta"], kind,
                                                            i["repository"]["size"], kind, i["repository"]["delta"]))

        time.sleep(1.1)
        restore_point = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        want = sql("SELECT count(*) FROM drill")
        time.sleep(1.1)
        sql("INSERT INTO drill (id, payload) SELECT g, 'after' FROM generate_series(%d * 2, %d * 2 + 999) g"
            % (rows, rows))
        prober = RideProbe(api_url, token, os.path.join(d, "probe-to"), 0.25, 5)
        stack.callback(prober.stop)
        time.sleep(1)
        timed_restore(["--to", restore_point], "to", prober)
        got = sql("SELECT count(*) FROM drill")
        if got != want:
            note("restore --to: %s rows, want %s" % (got, want))
            raise BenchError("", 1)

        note("one commit every 50 ms for %d s, then kill -9 of PostgreSQL" % write_seconds)
        acks = os.path.join(d, "acks")
        # Each row psql prints is a commit PostgreSQL acknowledged (synchronous_commit on, durable).
        with open(acks, "wb") as out:
            writer = subprocess.Popen(["psql", "-X", "-At", "-q", "-v", "ON_ERROR_STOP=1", url], stdin=subprocess.PIPE,
                                      stdout=out, stderr=subprocess.DEVNULL)
            try:
                end, i = time.time() + write_seconds, 0
                while time.time() < end:
                    i += 1
                    writer.stdin.write(("INSERT INTO drill (id, payload) VALUES (-%d, 'tail') RETURNING id, "
                                        "to_char(committed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US');\n"
                                        % i).encode())
                    writer.stdin.flush()
                    time.sleep(0.05)
                writer.stdin.close()
                writer.wait()
            finally:
                if writer.poll() is None:
                    writer.kill()
                    writer.wait()
        prober = RideProbe(api_url, token, os.path.join(d, "probe-latest"), 0.25, 5)
        stack.callback(prober.stop)
        time.sleep(1)
        pid = int(read(os.path.join(d, "servers", "pg", "postmaster.pid")).splitlines()[0])
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.1)
        ack_lines = [line for line in read(acks).splitlines() if line]
        timed_restore(["--latest"], "latest", prober)
        count, last_restored = sql(
            "SELECT count(*) || '|' || COALESCE(to_char(max(committed_at) AT TIME ZONE 'UTC', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS.US'), 'none') FROM drill WHERE id < 0").split("|")
        acked = len(ack_lines)
        if acked == 0:
            lost_seconds = 0.0
        else:
            # With none of the drill's commits restored (nothing archived since they began), every
            # acknowledged one is lost: the window runs from the first acknowledgement.
            lost_from = last_restored if last_restored != "none" else ack_lines[0].split("|")[1]
            lost_seconds = (datetime.datetime.fromisoformat(ack_lines[-1].split("|")[1])
                            - datetime.datetime.fromisoformat(lost_from)).total_seconds()
        figure("latest_lost_commits=%d of %d latest_lost_seconds=%.1f archive_timeout=%s" % (
            acked - int(count), acked, lost_seconds, archive_timeout))
    return 0
