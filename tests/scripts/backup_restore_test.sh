#!/usr/bin/env bash
# Backups and point-in-time restore in the plain shape (scripts/cluster.sh, which archives WAL
# through pgBackRest from the start): rows written, a full backup, more rows, a diff backup based
# on the full one, a time noted between two batches of rows; `backups` lists both with the oldest
# restore point; a restore to a time before that point fails in one line and stops nothing;
# `restore --to` the noted time brings back exactly the rows committed before it, the daemons serve
# again and a ride is booked; rows written after that restore come back with `restore --latest`
# (PostgreSQL still running: the archive is flushed first); the backup metrics file says when the
# last backup and the last archived segment were; `verify` passes the repository, then refuses it
# once a backup file is damaged and an archived segment removed, naming both, and `status` and the
# metrics say so. Needs pgbackrest, haproxy and pgbouncer
# (scripts/install-deps.sh); about three minutes with the sanitized build.
#
#   tests/scripts/backup_restore_test.sh BIN_DIR
set -euo pipefail
bin_dir=${1:?usage: $0 BIN_DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
cluster=$repo/scripts/cluster.sh
dir=$(mktemp -d /tmp/rr-backup-test.XXXXXX)
cleanup() {
  "$cluster" stop "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

# shellcheck source=tests/support/checks.sh
source "$(dirname "$0")/../support/checks.sh"

step "starting the plain cluster"
eval "$("$cluster" start "$dir" --bin-dir "$bin_dir" 2>"$dir.start.log")" || { tail -n 20 "$dir.start.log" >&2; exit 1; }
rm -f "$dir.start.log"

sql() { psql -X -At -v ON_ERROR_STOP=1 "$DIRECT_DATABASE_URL" -c "$1"; }
rows() { sql "SELECT count(*) || ' ' || COALESCE(min(id), 0) || '-' || COALESCE(max(id), 0) FROM restore_probe"; }
insert() { sql "INSERT INTO restore_probe (id) SELECT generate_series($1, $2)" >/dev/null; }
now_rfc3339() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }
post_ride() {
  curl -sS -o /dev/null -w '%{http_code}' --max-time 20 -X POST "$API_URL/rides" \
    -H "Authorization: Bearer $ROCKET_RIDES_TOKEN" -H "Idempotency-Key: backup-test-$1-$(cat /proc/sys/kernel/random/uuid)" \
    -d origin_lat=37.7749 -d origin_lon=-122.4194 -d target_lat=37.8044 -d target_lon=-122.2712
}

sql "CREATE TABLE restore_probe (id int PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT clock_timestamp())" >/dev/null
insert 1 10
before_backups=$(now_rfc3339)
sleep 1.1

step "full backup, more rows, diff backup"
"$cluster" backup "$dir" --full 2>>"$dir/logs/backup-test.log" || fail "backup --full failed"
insert 11 20
"$cluster" backup "$dir" --diff 2>>"$dir/logs/backup-test.log" || fail "backup --diff failed"
list=$("$cluster" backups "$dir" 2>&1) || fail "backups failed: $list"
echo "$list" | sed 's/^/    /'
full_label=$(echo "$list" | awk '$2 == "full" { print $1 }' | head -n 1)
if [ -n "$full_label" ]; then ok "backups lists the full backup $full_label"; else fail "backups lists no full backup"; fi
if grep -qE "^[0-9]{8}-[0-9]{6}F_[0-9]{8}-[0-9]{6}D diff .* based on $full_label\$" <<<"$list"; then
  ok "backups lists a diff backup based on it"
else
  fail "backups lists no diff backup based on the full one"
fi
oldest=$(echo "$list" | sed -n 's/^oldest restore point: \([^ ]*\) .*/\1/p')
if [ -n "$oldest" ]; then ok "backups gives the oldest restore point $oldest"; else fail "backups gives no oldest restore point"; fi

insert 21 30
sleep 1.1
restore_point=$(now_rfc3339)
sleep 1.1
insert 31 40
[ "$(rows)" = "40 1-40" ] || fail "before the restore: $(rows), want 40 1-40"

step "a restore to a time before the oldest backup fails in one line"
api1_pid=$(cat "$dir/pids/api1.pid")
refused_in_one_line "restore --to $before_backups (before the oldest backup)" \
  "is before the oldest restore point $oldest" "$cluster" restore "$dir" --to "$before_backups"
[ "$(cat "$dir/pids/api1.pid")" = "$api1_pid" ] && kill -0 "${api1_pid% *}" 2>/dev/null ||
  fail "the refused restore stopped api1"

step "restore --to $restore_point"
started=$(date +%s)
out=$("$cluster" restore "$dir" --to "$restore_point" 2>"$dir/logs/restore-to.log") ||
  { tail -n 30 "$dir/logs/restore-to.log" >&2; fail "restore --to failed"; }
echo "$out" | sed 's/^/    /'
step "restore --to took $(($(date +%s) - started)) s"
got=$(rows)
if [ "$got" = "30 1-30" ]; then ok "restore --to: exactly the rows committed before it ($got)"
else fail "restore --to $restore_point: rows $got, want 30 1-30"; fi
late=$(sql "SELECT count(*) FROM restore_probe WHERE committed_at > '$restore_point'")
[ "$late" = 0 ] || fail "$late restored rows were committed after $restore_point"
grep -q "^restored to: $restore_point" <<<"$out" || fail "restore does not say what it restored to: $out"
fence=$(sql "SELECT count(*) FROM write_fences WHERE reason = 'restored to $restore_point'")
[ "$fence" = 1 ] && ok "writes closed: one write_fences row" || fail "$fence write_fences rows for this restore, want 1"
reopened=$(sql "SELECT count(*) FROM write_fences WHERE reason = 'restored to $restore_point' AND reopened_at IS NOT NULL")
[ "$reopened" = 1 ] && ok "the restore's reconciliation reopened writes" || fail "the restore's fence is still open"
status=$(post_ride after-restore)
[ "$status" = 201 ] && ok "a ride after the restore: 201" || fail "POST /rides after the restore: $status, want 201"

step "rows after the restore, then restore --latest"
insert 41 50
want=$(rows)
started=$(date +%s)
"$cluster" restore "$dir" --latest >"$dir/logs/restore-latest.out" 2>"$dir/logs/restore-latest.log" ||
  { tail -n 30 "$dir/logs/restore-latest.log" >&2; fail "restore --latest failed"; }
step "restore --latest took $(($(date +%s) - started)) s"
got=$(rows)
if [ "$got" = "$want" ] && [ "$want" = "40 1-50" ]; then ok "restore --latest: every row ($got)"
else fail "restore --latest: rows $got, want 40 1-50 (before: $want)"; fi

step "status and metrics"
status_out=$("$cluster" status "$dir")
echo "$status_out" | grep -E '^(backup|archive|check):' | sed 's/^/    /'
grep -q '^check: ok' <<<"$status_out" || fail "status: pgbackrest check is not ok"
grep -q '^backup: last full' <<<"$status_out" || fail "status names no last backup"
"$cluster" backup-metrics "$dir" "$dir/backup.prom" || fail "backup-metrics failed"
metric() { awk -v m="$1" '$1 == m { print $2 }' "$dir/backup.prom" 2>/dev/null; }
now=$(date +%s)
for metric in rocket_rides_backup_last_success_timestamp_seconds rocket_rides_archive_last_push_timestamp_seconds; do
  value=$(metric "$metric")
  if [ -n "$value" ] && [ "$value" -gt $((now - 600)) ] && [ "$value" -le "$now" ]; then ok "$metric $value"
  else fail "$metric is '${value}', want the last few minutes (now $now)"; fi
done
pending=$(metric rocket_rides_archive_pending_segments)
[ -n "$pending" ] || fail "no rocket_rides_archive_pending_segments"
grep -q '^verify: never run' <<<"$status_out" || fail "status before any verify: $(echo "$status_out" | grep '^verify')"
[ "$(metric rocket_rides_backup_last_verify_timestamp_seconds)" = 0 ] || fail "a verify timestamp before any verify"

step "pgbackrest verify: a sound repository, then one with a damaged backup file"
if out=$("$cluster" verify "$dir" 2>&1); then ok "verify: $out"; else fail "verify of a sound repository failed: $out"; fi
status_out=$("$cluster" status "$dir")
grep -q '^verify: ok at ' <<<"$status_out" && ok "status: $(echo "$status_out" | grep '^verify')" ||
  fail "status after a good verify: $(echo "$status_out" | grep '^verify' || echo none)"
"$cluster" backup-metrics "$dir" "$dir/backup.prom" || fail "backup-metrics failed"
[ "$(metric rocket_rides_backup_verify_ok)" = 1 ] || fail "rocket_rides_backup_verify_ok $(metric rocket_rides_backup_verify_ok) after a good verify"
verified_at=$(metric rocket_rides_backup_last_verify_timestamp_seconds)
[ -n "$verified_at" ] && [ "$verified_at" -gt $((now - 600)) ] || fail "rocket_rides_backup_last_verify_timestamp_seconds '$verified_at'"
# The largest file of the newest backup, a few bytes overwritten in its middle: what a bad disk
# or a hand in the repository does. The repository is not used again by this test.
victim=$(find "$dir/servers/backup-repo/backup" -path '*/pg_data/*' -type f -printf '%s %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-)
size=$(stat -c %s "$victim")
printf 'damaged!' | dd of="$victim" bs=1 seek=$((size / 2)) conv=notrunc status=none
# And a hole in the archive: three more segments on the current timeline (each switch after a
# write; `status` runs pgbackrest check, which waits until the last is archived), the middle one
# of them removed.
for n in 1 2 3; do insert $((100 + n)) $((100 + n)); sql "SELECT pg_switch_wal()" >/dev/null; done
"$cluster" status "$dir" >/dev/null
timeline=$(sql "SELECT lpad(to_hex(timeline_id), 8, '0') FROM pg_control_checkpoint()" | tr a-f A-F)
segments=$(find "$dir/servers/backup-repo/archive" -name "${timeline}*-*" -type f | sort)
hole=$(echo "$segments" | tail -n 3 | sed -n 2p)
hole_name=$(basename "$hole" | cut -c1-24)
rm -f "$hole"
if out=$("$cluster" verify "$dir" 2>&1); then
  fail "verify passed a repository with $victim damaged and $hole_name gone: $out"
else
  grep -q 'checksum invalid: 1' <<<"$out" && ok "verify names the damaged file: $out" ||
    fail "verify does not name the damaged backup file: $out"
  grep -q "WAL gap: timeline $((16#$timeline)) misses $hole_name" <<<"$out" && ok "verify names the hole in the archive" ||
    fail "verify does not name the missing segment $hole_name: $out"
fi
status_out=$("$cluster" status "$dir")
grep -q '^verify: FAILED at ' <<<"$status_out" && ok "status: $(echo "$status_out" | grep '^verify')" ||
  fail "status after a failed verify: $(echo "$status_out" | grep '^verify' || echo none)"
"$cluster" backup-metrics "$dir" "$dir/backup.prom" || fail "backup-metrics failed"
[ "$(metric rocket_rides_backup_verify_ok)" = 0 ] || fail "rocket_rides_backup_verify_ok $(metric rocket_rides_backup_verify_ok) after a failed verify"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed; logs in $dir/logs (kept)" >&2
  trap - EXIT
  "$cluster" stop "$dir" >/dev/null 2>&1 || true
  exit 1
fi
echo "all checks passed"
