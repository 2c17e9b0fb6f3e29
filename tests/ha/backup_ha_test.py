#!/usr/bin/env python3
"""Backups and a point-in-time restore in the HA shape (scripts/cluster.sh start --ha;
docs/high-availability.md, "Restoring the HA shape").

Starts the cluster (the leader archives through pgBackRest from the start), writes rows, takes a
full backup, writes more, switches the leader over, checks that `pgbackrest check` passes from the
new leader (`status`: the archive goes on from whichever node leads), writes rows after the
switchover, notes a time, writes more, then `restore --to` that time: exactly the rows committed
before it (those written after the switchover among them) come back, the cluster has a leader and
two streaming standbys again, each rebuilt from the repository, and a ride is booked through the
API. `stop` leaves no process behind.

  tests/ha/backup_ha_test.py --bin-dir build/bin [--keep]
"""
import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(REPO, "scripts", "cluster.sh")
RIDE = b"origin_lat=37.7749&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712"


def log(message):
    print("[backup_ha_test %s] %s" % (time.strftime("%H:%M:%S"), message), flush=True)


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)
    log("ok: " + message)


def cluster(directory, *args, timeout=300):
    result = subprocess.run([CLUSTER, args[0], directory] + list(args[1:]), capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        raise Failure("cluster.sh %s failed (exit %d): %s" % (" ".join(args), result.returncode, result.stderr[-3000:]))
    return result


def sql(env, statement):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", env["DIRECT_DATABASE_URL"], "-c", statement],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()


def rows(env):
    return sql(env, "SELECT count(*) || ' ' || min(id) || '-' || max(id) FROM restore_probe")


def insert(env, first, last):
    sql(env, "INSERT INTO restore_probe (id) SELECT generate_series(%d, %d)" % (first, last))


def post_ride(env):
    request = urllib.request.Request(env["API_URL"] + "/rides", data=RIDE, method="POST")
    request.add_header("Authorization", "Bearer " + env["ROCKET_RIDES_TOKEN"])
    request.add_header("Idempotency-Key", "backup-ha-test-" + str(uuid.uuid4()))
    request.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def run(directory, bin_dir):
    started = time.monotonic()
    log("starting the HA cluster")
    out = cluster(directory, "start", "--ha", "--bin-dir", bin_dir, timeout=300).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export "):].partition("=")
            env[name] = value.strip("'")
    first_leader = cluster(directory, "leader").stdout.strip()
    sql(env, "CREATE TABLE restore_probe (id int PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT clock_timestamp())")
    insert(env, 1, 10)
    log("full backup from the leader %s" % first_leader)
    cluster(directory, "backup", "--full")
    insert(env, 11, 20)

    log("switchover")
    cluster(directory, "switchover", timeout=120)
    leader = cluster(directory, "leader").stdout.strip()
    check(leader != first_leader, "the leader moved from %s to %s" % (first_leader, leader))
    status = cluster(directory, "status").stdout
    check("check: ok" in status, "pgbackrest check passes from the new leader %s" % leader)
    insert(env, 21, 30)
    time.sleep(1.1)
    restore_point = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    time.sleep(1.1)
    insert(env, 31, 40)

    log("restore --to %s" % restore_point)
    restore_started = time.monotonic()
    result = cluster(directory, "restore", "--to", restore_point, timeout=400)
    log("restore took %.0f s; its steps:" % (time.monotonic() - restore_started))
    for line in result.stderr.splitlines():
        print("    " + line, flush=True)
    check(("restored to: " + restore_point) in result.stdout, "restore says what it restored to")
    got = rows(env)
    check(got == "30 1-30", "exactly the rows committed before the restore point, those after the switchover "
                            "among them (%s)" % got)
    status = cluster(directory, "status").stdout
    members = [line for line in status.splitlines() if line.startswith("n")]
    streaming = [line for line in members if "replication=streaming" in line]
    check(len(streaming) == 2 and "leader: " in status, "a leader and two streaming standbys again:\n    " +
          "\n    ".join(members))
    rebuilt = 0
    for n in (1, 2, 3):
        with open(os.path.join(directory, "logs", "patroni%d.log" % n)) as f:
            # At start the repository has no backup yet and the standbys come from the leader.
            rebuilt += f.read().count("replica has been created using pgbackrest")
    check(rebuilt == 2, "both standbys rebuilt from the repository (replica created using pgbackrest)")
    check("check: ok" in status, "pgbackrest check passes after the restore")
    fences = sql(env, "SELECT count(*) FROM write_fences WHERE reason = 'restored to %s'" % restore_point)
    check(fences == "1", "writes closed by one write_fences row")
    reopened = sql(env, "SELECT count(*) FROM write_fences WHERE reason = 'restored to %s' AND reopened_at IS NOT NULL"
                   % restore_point)
    check(reopened == "1", "the restore's reconciliation reopened writes")
    status_code = post_ride(env)
    check(status_code == 201, "a ride after the restore: %d" % status_code)
    log("done in %.0f s" % (time.monotonic() - started))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--keep", action="store_true", help="keep the directory (logs) after the run")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="rr-backup-ha.")
    failed = False
    try:
        run(directory, os.path.abspath(args.bin_dir))
    except (Failure, subprocess.SubprocessError) as error:
        failed = True
        print("FAIL: %s" % error, file=sys.stderr)
    finally:
        subprocess.run([CLUSTER, "stop", directory], capture_output=True, text=True, timeout=300)
        left = subprocess.run(["pgrep", "-f", directory], capture_output=True, text=True).stdout.split()
        if left:
            failed = True
            print("FAIL: processes left after stop: %s" % " ".join(left), file=sys.stderr)
        if failed or args.keep:
            print("logs kept in %s/logs" % directory, file=sys.stderr)
        else:
            shutil.rmtree(directory, ignore_errors=True)
    print("all checks passed" if not failed else "FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
