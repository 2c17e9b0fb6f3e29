#!/usr/bin/env bash
# The restore drill, timed, on the plain production shape (scripts/cluster.sh: durable
# PostgreSQL archiving through pgBackRest, PgBouncer, two APIs, the daemons):
#   1. DRILL_ROWS rows of about 200 bytes (default 400000, about 100 MB of table and index);
#   2. a full backup (its time, the database's size and the repository's), then a diff backup
#      after DRILL_ROWS/10 more rows;
#   3. restore --to a time noted between two commits (the command's time, from the first stop to
#      the daemons serving again, the full backup after it excluded);
#   4. what restore --latest loses when PostgreSQL dies without a flush: one commit every 50 ms
#      for DRILL_WRITE_SECONDS (default 75: longer than ARCHIVE_TIMEOUT), kill -9 of PostgreSQL,
#      restore --latest; the seconds and rows between the last acknowledged commit and the last
#      restored one.
# During each restore a prober books a ride every 250 ms through HAProxy: writes_closed_ms is the
# time from the first answer that is not a 201 (the restore stopping the daemons, or the kill) to
# the first 201 after it (writes reopened: the restore's reconciliation pass has run and the APIs
# saw the fence lifted), as a client sees it; beside it, how far into the restore its own
# reconciliation pass ended, and what it did.
# Prints one line per figure and a summary line; docs/operations.md quotes them.
#
#   bench/restore_drill.sh [--bin-dir BIN]      (default build/bin; ARCHIVE_TIMEOUT=N to vary)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cluster=$repo/scripts/cluster.sh
bin_dir=$repo/build/bin
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir=${2:?}; shift 2 ;;
    *) echo "usage: $0 [--bin-dir BIN]" >&2; exit 2 ;;
  esac
done
rows=${DRILL_ROWS:-400000}
write_seconds=${DRILL_WRITE_SECONDS:-75}
dir=$(mktemp -d /tmp/rr-restore-drill.XXXXXX)
writer=""
cleanup() {
  if [ -n "$writer" ]; then kill "$writer" 2>/dev/null || true; fi
  if [ -n "${prober:-}" ]; then kill "$prober" 2>/dev/null || true; fi
  "$cluster" stop "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
note() { echo "[restore_drill $(date +%T)] $*" >&2; }
figure() { echo "$*"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
prober=""
# start_prober FILE: "epoch_ms status" per line, one POST /rides every 250 ms (000: no answer).
start_prober() {
  (
    i=0
    while :; do
      i=$((i + 1))
      code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 -X POST "$API_URL/rides" \
        -H "Authorization: Bearer $ROCKET_RIDES_TOKEN" -H "Idempotency-Key: drill-probe-$$-$i-$RANDOM" \
        -d origin_lat=37.7749 -d origin_lon=-122.4194 -d target_lat=37.8044 -d target_lon=-122.2712 2>/dev/null) || true
      echo "$(($(date +%s%N) / 1000000)) ${code:-000}"
      sleep 0.25
    done
  ) >"$1" &
  prober=$!
}
stop_prober() {
  if [ -n "$prober" ]; then kill "$prober" 2>/dev/null || true; wait "$prober" 2>/dev/null || true; fi
  prober=""
}
# closed_figure NAME FILE LOG: the writes-closed span from the prober's file, the pass from the log.
closed_figure() {
  local span reconcile
  span=$(awk '$2 != 201 && !start { start = $1 } start && $2 == 201 { print $1 - start; exit }' "$2")
  reconcile=$(sed -n 's/^cluster: \[+\([0-9]*\) s\] reconcile: \(matched=.*\)$/\1 s into the restore: \2/p' "$3" | tail -n 1)
  figure "${1}_writes_closed_ms=${span:-never reopened} (reconcile: ${reconcile:-no pass logged})"
}

note "starting the cluster (ARCHIVE_TIMEOUT=${ARCHIVE_TIMEOUT:-60})"
eval "$("$cluster" start "$dir" --bin-dir "$bin_dir" 2>"$dir.start.log")" || { tail -n 20 "$dir.start.log" >&2; exit 1; }
rm -f "$dir.start.log"
sql() { psql -X -At -v ON_ERROR_STOP=1 "$DIRECT_DATABASE_URL" -c "$1"; }
sql "CREATE TABLE drill (id bigint PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT clock_timestamp(), payload text NOT NULL)" >/dev/null
note "writing $rows rows"
sql "INSERT INTO drill (id, payload) SELECT g, repeat(md5(g::text), 5) FROM generate_series(1, $rows) g" >/dev/null
figure "database_size_bytes=$(sql "SELECT pg_database_size('rocket_rides')")"

t=$(date +%s%N)
"$cluster" backup "$dir" --full >/dev/null 2>>"$dir/logs/drill.log"
figure "full_backup_ms=$(ms_since "$t")"
sql "INSERT INTO drill (id, payload) SELECT g, repeat(md5(g::text), 5) FROM generate_series($rows + 1, $rows + $rows / 10) g" >/dev/null
t=$(date +%s%N)
"$cluster" backup "$dir" --diff >/dev/null 2>>"$dir/logs/drill.log"
figure "diff_backup_ms=$(ms_since "$t")"
info=$(runuser -u postgres -- pgbackrest --config="$dir/servers/pgbackrest/pgbackrest.conf" --stanza=rocket-rides info --output=json)
python3 - "$info" <<'PY'
import json, sys
backups = json.loads(sys.argv[1])[0]["backup"]
for b in backups:
    # size: the database as restored from this backup; delta: what this backup copied; the
    # repository's figures are the same after compression.
    i = b["info"]
    print("%s_backup_size_bytes=%d %s_backup_copied_bytes=%d %s_backup_repository_bytes=%d %s_backup_repository_copied_bytes=%d" % (
        b["type"], i["size"], b["type"], i["delta"], b["type"], i["repository"]["size"], b["type"], i["repository"]["delta"]))
PY

sleep 1.1
restore_point=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
want=$(sql "SELECT count(*) FROM drill")
sleep 1.1
sql "INSERT INTO drill (id, payload) SELECT g, 'after' FROM generate_series($rows * 2, $rows * 2 + 999) g" >/dev/null
start_prober "$dir/probe-to"
sleep 1
t=$(date +%s%N)
"$cluster" restore "$dir" --to "$restore_point" >"$dir/logs/drill-restore-to.out" 2>"$dir/logs/drill-restore-to.log"
total=$(ms_since "$t")
stop_prober
closed_figure restore_to "$dir/probe-to" "$dir/logs/drill-restore-to.log"
backup_after=$(sed -n 's/^cluster: .*full backup done in \([0-9]*\) s$/\1/p' "$dir/logs/drill-restore-to.log" | tail -n 1)
figure "restore_to_ms=$((total - ${backup_after:-0} * 1000)) (the full backup after it: ${backup_after:-?} s more)"
got=$(sql "SELECT count(*) FROM drill")
[ "$got" = "$want" ] || { note "restore --to: $got rows, want $want"; exit 1; }

note "one commit every 50 ms for $write_seconds s, then kill -9 of PostgreSQL"
acks=$dir/acks
# Each row psql prints is a commit PostgreSQL acknowledged (synchronous_commit on, durable).
python3 - "$write_seconds" <<'PY' | psql -X -At -q -v ON_ERROR_STOP=1 "$DIRECT_DATABASE_URL" >"$acks" 2>/dev/null &
import sys, time
end = time.time() + float(sys.argv[1])
i = 0
while time.time() < end:
    i += 1
    print("INSERT INTO drill (id, payload) VALUES (-%d, 'tail') RETURNING id, to_char(committed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US');" % i, flush=True)
    time.sleep(0.05)
PY
writer=$!
wait "$writer" || true
writer=""
start_prober "$dir/probe-latest"
sleep 1
pid=$(head -n 1 "$dir/servers/pg/postmaster.pid")
kill -KILL "$pid"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
last_ack=$(tail -n 1 "$acks")
acked=$(grep -c . "$acks")
t=$(date +%s%N)
"$cluster" restore "$dir" --latest >"$dir/logs/drill-restore-latest.out" 2>"$dir/logs/drill-restore-latest.log"
total=$(ms_since "$t")
stop_prober
closed_figure restore_latest "$dir/probe-latest" "$dir/logs/drill-restore-latest.log"
backup_after=$(sed -n 's/^cluster: .*full backup done in \([0-9]*\) s$/\1/p' "$dir/logs/drill-restore-latest.log" | tail -n 1)
figure "restore_latest_ms=$((total - ${backup_after:-0} * 1000)) (the full backup after it: ${backup_after:-?} s more)"
restored=$(sql "SELECT count(*) || '|' || COALESCE(to_char(max(committed_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US'), 'none') FROM drill WHERE id < 0")
python3 - "$last_ack" "$acked" "$restored" "${ARCHIVE_TIMEOUT:-60}" <<'PY'
import datetime, sys
last_ack = sys.argv[1].split("|")[1]
acked = int(sys.argv[2])
count, last_restored = sys.argv[3].split("|")
parse = lambda s: datetime.datetime.fromisoformat(s)
lost_rows = acked - int(count)
lost_seconds = 0.0 if last_restored == "none" and acked == 0 else (
    (parse(last_ack) - parse(last_restored)).total_seconds() if last_restored != "none" else float("nan"))
print("latest_lost_commits=%d of %d latest_lost_seconds=%.1f archive_timeout=%s" % (lost_rows, acked, lost_seconds, sys.argv[4]))
PY
