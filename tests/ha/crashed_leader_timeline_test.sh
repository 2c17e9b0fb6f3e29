#!/usr/bin/env bash
# A crashed leader comes back on its own timeline (deploy/patroni-restore-command), without Patroni:
# a primary A archiving through pgBackRest and a standby B streaming from it; B stops, A writes rows
# B never receives and is killed (pg_control: "in production"); B is promoted and archives the new
# timeline's history file; A starts as B's standby with the node's restore_command. Checks: A's
# crash recovery keeps timeline 1 as its target (with the history file fetched it took timeline 2
# and replayed timeline 1's WAL past the fork, the state in which Patroni skipped pg_rewind and the
# node never streamed again), the command said why it refused the file, and once A is in archive
# recovery the same command serves the file (a standby still follows new timelines), and A sees the
# new timeline fork off its own before its recovery point (what pg_rewind repairs). About fifteen
# seconds. Needs pgbackrest; skipped (77) without it.
#
#   tests/ha/crashed_leader_timeline_test.sh
set -euo pipefail
# shellcheck source=tests/support/checks.sh
source "$(dirname "$0")/../support/checks.sh"
# shellcheck source=tests/support/archiving_servers.sh
source "$(dirname "$0")/../support/archiving_servers.sh"

pa=$(server_port 1)
pb=$(server_port 2)
server_config a "$pa"
server_config b "$pb"

step "primary A (timeline 1), archiving; standby B streaming from it"
rrsuite_server postgres-init "$dir/a" "$dir/initdb.log"
rrsuite_server postgres-start "$dir/a" "$dir/a.log" 60 "-p $pa -c listen_addresses='' -c unix_socket_directories='$dir' \
  -c wal_level=replica -c $(archive_to "$dir/a.conf")"
as_pg pgbackrest "--config=$dir/a.conf" --stanza=rocket-rides stanza-create >/dev/null
as_pg "$bin/pg_basebackup" -h "$dir" -p "$pa" -U postgres -D "$dir/b" -X stream -R >/dev/null
rrsuite_server postgres-start "$dir/b" "$dir/b.log" 60 "-p $pb -c listen_addresses='' -c unix_socket_directories='$dir' \
  -c $(archive_to "$dir/b.conf")"
sql "$pa" "CREATE TABLE probe (id int)" >/dev/null
sql "$pa" "INSERT INTO probe SELECT generate_series(1, 100)" >/dev/null
until_sql "$pb" "SELECT count(*) FROM probe" 100 || fail "B did not receive A's first rows"

step "B stops; A writes rows B never receives and is killed (no shutdown checkpoint)"
as_pg "$bin/pg_ctl" -D "$dir/b" -m fast -w stop >/dev/null
sql "$pa" "INSERT INTO probe SELECT generate_series(101, 5000)" >/dev/null
as_pg "$bin/pg_ctl" -D "$dir/a" -m immediate stop >/dev/null
state=$(cluster_state "$dir/a")
[ "$state" = "in production" ] || fail "A's pg_control says '$state', not 'in production'"

step "B is promoted to timeline 2 and archives its history file"
rrsuite_server postgres-start "$dir/b" "$dir/b.log" 60 "-p $pb -c listen_addresses='' -c unix_socket_directories='$dir' \
  -c $(archive_to "$dir/b.conf")"
as_pg "$bin/pg_ctl" -D "$dir/b" -w promote >/dev/null
until_archived "$dir/b.conf" 00000002.history || fail "B's 00000002.history is not in the archive after 30 s"

step "A starts as B's standby with the node's restore_command"
as_pg touch "$dir/a/standby.signal"
restore_command=$(rrsuite_backup patroni-restore-command "$dir/a.conf" "$bin")
rrsuite_server postgres-start "$dir/a" "$dir/a.log" 60 "-p $pa -c listen_addresses='' -c unix_socket_directories='$dir' \
  -c archive_mode=off -c 'restore_command=$restore_command' -c 'primary_conninfo=host=$dir port=$pb user=postgres' \
  -c recovery_target_timeline=latest" || fail "A did not start as a standby"
until_sql "$pa" "SELECT pg_is_in_recovery()" t || fail "A does not answer as a standby"

if grep -q "has target timeline 2" "$dir/a.log"; then
  fail "A's crash recovery took timeline 2 as its target: $(grep 'has target timeline' "$dir/a.log")"
else
  ok "A's crash recovery kept its own timeline (no 'has target timeline 2' in its log)"
fi
if grep -q "patroni-restore-command: not fetching 00000002.history" "$dir/a.log"; then
  ok "the restore command said why it did not fetch 00000002.history"
else
  fail "no line from the restore command refusing 00000002.history in A's log"
fi
# PostgreSQL itself now sees the divergence that Patroni rewinds (the walreceiver fetched the
# history file from B and streams timeline 1, whose end is before A's recovery point).
forked=""
for _ in $(seq 1 100); do
  if grep -q "new timeline 2 forked off current database system timeline 1 before current recovery point" "$dir/a.log"; then
    forked=1
    break
  fi
  sleep 0.2
done
if [ -n "$forked" ]; then
  ok "A sees timeline 2 forked off its own before its recovery point (the state pg_rewind repairs)"
else
  fail "A's log never says timeline 2 forked off timeline 1 before its recovery point"
fi
state=$(cluster_state "$dir/a")
if [ "$state" = "in archive recovery" ] && restore_command_serves a 00000002.history; then
  ok "in archive recovery the same command serves 00000002.history"
else
  fail "A's pg_control says '$state'; the command did not serve 00000002.history there"
fi

finish a
