#!/usr/bin/env bash
# Backups and point-in-time restore of the local servers (scripts/local-servers.sh start DIR
# --archive: what scripts/run.sh starts), without the cluster around them: `backup` refuses servers
# that do not archive, in one line; a full backup, rows, a time noted, more rows; `backups` gives
# the oldest restore point; a restore before it fails in one line and stops nothing; `restore --to`
# the noted time brings back exactly the rows committed before it, closes writes and, with
# --reconcile and the daemons' environment file, runs the reconciliation pass against the stand-in
# provider that reopens them; `restore --latest` with PostgreSQL still up brings back every row and,
# without --reconcile, leaves writes closed and says which command opens them. About a minute.
#
#   tests/scripts/local_backup_restore_test.sh BIN_DIR
set -euo pipefail
bin_dir=${1:?usage: $0 BIN_DIR}
bin_dir=$(cd "$bin_dir" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
servers=$repo/scripts/local-servers.sh
dir=$(mktemp -d /tmp/rr-local-backup-test.XXXXXX)
plain=$dir/plain
archived=$dir/archived
provider=""
cleanup() {
  if [ -n "$provider" ]; then kill "$provider" 2>/dev/null || true; fi
  "$servers" stop "$plain" >/dev/null 2>&1 || true
  "$servers" stop "$archived" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
chmod 755 "$dir"

# shellcheck source=tests/support/checks.sh
source "$(dirname "$0")/../support/checks.sh"

step "servers without --archive: backup refuses in one line"
"$servers" start "$plain" --fast >/dev/null
refused_in_one_line "backup of servers that do not archive" "does not archive (start it with --archive)" \
  "$servers" backup "$plain" --full
"$servers" stop "$plain" >/dev/null

step "servers with --archive, migrated"
eval "$("$servers" start "$archived" --archive)"
"$bin_dir/rocket-rides-api" migrate >"$dir/migrate.log" 2>&1 || { cat "$dir/migrate.log" >&2; exit 1; }
sql() { psql -X -At -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "$1"; }
rows() { sql "SELECT count(*) || ' ' || COALESCE(min(id), 0) || '-' || COALESCE(max(id), 0) FROM restore_probe"; }
insert() { sql "INSERT INTO restore_probe (id) SELECT generate_series($1, $2)" >/dev/null; }
now_rfc3339() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }
postmaster() { head -n 1 "$archived/pg/postmaster.pid"; }
fences() { sql "SELECT count(*) || ' ' || count(reopened_at) FROM write_fences"; }
sql "CREATE TABLE restore_probe (id int PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT clock_timestamp())" >/dev/null
insert 1 10
before_backups=$(now_rfc3339)
sleep 1.1

step "a full backup, the list"
"$servers" backup "$archived" --full 2>"$dir/backup.log" >/dev/null || { cat "$dir/backup.log" >&2; fail "backup --full failed"; }
list=$("$servers" backups "$archived" 2>&1) || fail "backups failed: $list"
echo "$list" | sed 's/^/    /'
oldest=$(echo "$list" | sed -n 's/^oldest restore point: \([^ ]*\) .*/\1/p')
if [ -n "$oldest" ]; then ok "backups gives the oldest restore point $oldest"; else fail "backups gives no oldest restore point"; fi
insert 11 20
sleep 1.1
restore_point=$(now_rfc3339)
sleep 1.1
insert 21 30
[ "$(rows)" = "30 1-30" ] || fail "before the restore: $(rows), want 30 1-30"

step "a restore to a time before the oldest backup fails in one line"
pid=$(postmaster)
refused_in_one_line "restore --to $before_backups (before the oldest backup)" \
  "is before the oldest restore point $oldest" "$servers" restore "$archived" --to "$before_backups"
[ "$(postmaster)" = "$pid" ] && kill -0 "$pid" 2>/dev/null || fail "the refused restore stopped PostgreSQL"

step "restore --to $restore_point, reconciled with the daemons' environment file"
provider_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Started as tools/rrsuite starts it (ready once /_mock/stats answers); its pid printed.
provider=$(PYTHONPATH="$repo/tools" python3 -m rrsuite server provider "$bin_dir" "$provider_port" "$dir/provider.log") ||
  { cat "$dir/provider.log" >&2; fail "the stand-in provider did not start"; exit 1; }
# As run.sh writes it: quoted values (scripts/env-file.sh).
cat >"$dir/suite.env" <<ENV
DATABASE_URL='$DATABASE_URL'
STRIPE_API_BASE='http://127.0.0.1:$provider_port'
STRIPE_API_KEY='sk_test_local_backup'
PROVIDER_KEY_SECRET='$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')'
ENV
out=$("$servers" restore "$archived" --to "$restore_point" --reconcile "$dir/suite.env" --bin-dir "$bin_dir" 2>"$dir/restore-to.log") ||
  { tail -n 30 "$dir/restore-to.log" >&2; fail "restore --to failed"; }
sed 's/^/    /' "$dir/restore-to.log"
got=$(rows)
if [ "$got" = "20 1-20" ]; then ok "restore --to: exactly the rows committed before it ($got)"
else fail "restore --to $restore_point: rows $got, want 20 1-20"; fi
grep -q "^restored to: $restore_point " <<<"$out" && ok "it says what it restored to" ||
  fail "restore does not say what it restored to: $out"
[ "$(fences)" = "1 1" ] && ok "writes closed, then reopened by the reconciliation pass" ||
  fail "write_fences (rows, reopened): $(fences), want 1 1"
grep -q "reconcile: matched=" "$dir/restore-to.log" && ok "the pass's summary line is in the restore's output" ||
  fail "no reconcile summary line in the restore's output"

step "more rows, then restore --latest with PostgreSQL up, no --reconcile"
insert 31 40
want=$(rows)
out=$("$servers" restore "$archived" --latest 2>"$dir/restore-latest.log") ||
  { tail -n 30 "$dir/restore-latest.log" >&2; fail "restore --latest failed"; }
got=$(rows)
if [ "$got" = "$want" ] && [ "$want" = "30 1-40" ]; then ok "restore --latest: every row ($got)"
else fail "restore --latest: rows $got, want 30 1-40 (before: $want)"; fi
[ "$(fences)" = "2 1" ] && ok "writes stay closed without --reconcile" || fail "write_fences (rows, reopened): $(fences), want 2 1"
since=$(echo "$out" | sed -n 's/^reconcile since: //p')
grep -q "writes stay closed until: rocket-rides-api reconcile --since $since" "$dir/restore-latest.log" &&
  ok "it names the command that opens them" || fail "no reconcile command named: $(cat "$dir/restore-latest.log")"
(set -a && . "$dir/suite.env" && exec "$bin_dir/rocket-rides-api" reconcile --since "$since") >"$dir/reconcile.log" 2>&1 ||
  fail "reconcile failed: $(cat "$dir/reconcile.log")"
[ "$(fences)" = "2 2" ] && ok "that command reopened writes" || fail "write_fences (rows, reopened): $(fences), want 2 2"
list=$("$servers" backups "$archived" 2>&1)
[ "$(echo "$list" | grep -c ' full ')" -ge 2 ] && ok "each restore took a full backup of the new history" ||
  fail "want at least two full backups after the restores: $list"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
