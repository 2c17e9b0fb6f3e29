#!/usr/bin/env bash
# A standby never replays what a leader archived after another node was promoted
# (deploy/patroni-restore-command), without Patroni. A primary A archiving through pgBackRest, two
# standbys B and C streaming from it. C stops streaming, as Patroni makes a standby do when the
# leader's lock expires; B is promoted to timeline 2; A, whose Patroni was killed, is still a
# primary and archives timeline 1's WAL past the fork; C is pointed at B, as Patroni does once its
# divergence check found C not past the fork. With pgBackRest's plain archive-get, C restored A's
# later segments before it knew timeline 2, replayed past the fork and never streamed again (seen in
# fault_suite_ha_short: a standby "running" for minutes, not streaming, each five seconds "new
# timeline 2 forked off current database system timeline 1 before current recovery point").
# Checks: the command refuses those segments and says why, C streams from B and has B's rows and
# none of A's, and the command still serves a timeline-1 segment from before the fork. C retries the
# archive only once a minute (wal_retrieve_retry_interval), so the order above is the order it sees.
# About twenty seconds. Needs pgbackrest; skipped (77) without it.
#
#   tests/ha/zombie_leader_archive_test.sh
set -euo pipefail
# shellcheck source=tests/support/checks.sh
source "$(dirname "$0")/../support/checks.sh"
# shellcheck source=tests/support/archiving_servers.sh
source "$(dirname "$0")/../support/archiving_servers.sh"

pa=$(server_port 1)
pb=$(server_port 2)
pc=$(server_port 3)
server_config a "$pa"
server_config b "$pb"
server_config c "$pc"
local_only="-c listen_addresses='' -c unix_socket_directories='$dir'"

step "primary A (timeline 1), archiving; standbys B and C streaming from it"
rrsuite_server postgres-init "$dir/a" "$dir/initdb.log"
rrsuite_server postgres-start "$dir/a" "$dir/a.log" 60 \
  "-p $pa $local_only -c wal_level=replica -c $(archive_to "$dir/a.conf")"
as_pg pgbackrest "--config=$dir/a.conf" --stanza=rocket-rides stanza-create >/dev/null
sql "$pa" "CREATE TABLE probe (id int, written_by text)" >/dev/null
sql "$pa" "INSERT INTO probe SELECT i, 'A before the fork' FROM generate_series(1, 100) i" >/dev/null
for standby in b c; do
  # -R: primary_conninfo in postgresql.auto.conf, where ALTER SYSTEM changes it later.
  as_pg "$bin/pg_basebackup" -h "$dir" -p "$pa" -U postgres -D "$dir/$standby" -X stream -R \
    -d "dbname=postgres application_name=$standby" >/dev/null
done
rrsuite_server postgres-start "$dir/b" "$dir/b.log" 60 "-p $pb $local_only -c $(archive_to "$dir/b.conf")"
restore_command=$(rrsuite_backup patroni-restore-command "$dir/c.conf" "$bin")
rrsuite_server postgres-start "$dir/c" "$dir/c.log" 60 "-p $pc $local_only -c archive_mode=off \
  -c 'restore_command=$restore_command' -c recovery_target_timeline=latest -c wal_retrieve_retry_interval=60s"
until_sql "$pb" "SELECT count(*) FROM probe" 100 || fail "B did not receive A's rows"
until_sql "$pc" "SELECT count(*) FROM probe" 100 || fail "C did not receive A's rows"
before_fork=$(sql "$pa" "SELECT pg_walfile_name(pg_current_wal_lsn())")
sql "$pa" "SELECT pg_switch_wal()" >/dev/null
until_archived "$dir/a.conf" "$before_fork" || fail "A's $before_fork is not in the archive after 30 s"

step "C stops streaming (primary_conninfo removed), as Patroni does when the leader's lock expires"
sql "$pc" "ALTER SYSTEM SET primary_conninfo = ''" >/dev/null
sql "$pc" "SELECT pg_reload_conf()" >/dev/null
until_sql "$pc" "SELECT count(*) FROM pg_stat_wal_receiver" 0 || fail "C's walreceiver did not stop"

step "B is promoted to timeline 2; A, still a primary, writes and archives timeline 1 past the fork"
as_pg "$bin/pg_ctl" -D "$dir/b" -w promote >/dev/null
until_archived "$dir/b.conf" 00000002.history || fail "B's 00000002.history is not in the archive after 30 s"
sql "$pa" "INSERT INTO probe SELECT i, 'A after the fork' FROM generate_series(101, 5000) i" >/dev/null
past_fork=$(sql "$pa" "SELECT pg_walfile_name(pg_current_wal_lsn())")
sql "$pa" "SELECT pg_switch_wal()" >/dev/null
sql "$pa" "INSERT INTO probe SELECT i, 'A after the fork' FROM generate_series(5001, 6000) i" >/dev/null
sql "$pa" "SELECT pg_switch_wal()" >/dev/null
until_archived "$dir/a.conf" "$past_fork" || fail "A's $past_fork is not in the archive after 30 s"
sql "$pb" "INSERT INTO probe SELECT i, 'B on timeline 2' FROM generate_series(1, 10) i" >/dev/null

step "C is pointed at B (Patroni's primary_conninfo once its check saw no divergence)"
sql "$pc" "ALTER SYSTEM SET primary_conninfo = 'host=$dir port=$pb user=postgres application_name=c'" >/dev/null
sql "$pc" "SELECT pg_reload_conf()" >/dev/null

if until_sql "$pb" "SELECT state FROM pg_stat_replication WHERE application_name = 'c'" streaming; then
  ok "C streams from B"
else
  fail "C does not stream from B after 30 s"
fi
if until_sql "$pc" "SELECT count(*) FROM probe WHERE written_by = 'B on timeline 2'" 10; then
  ok "C has the rows B wrote on timeline 2"
else
  fail "C does not have the rows B wrote on timeline 2"
fi
after_fork=$(sql "$pc" "SELECT count(*) FROM probe WHERE written_by = 'A after the fork'" 2>/dev/null || echo "?")
if [ "$after_fork" = 0 ]; then
  ok "C has none of the rows A wrote after the fork"
else
  fail "C has $after_fork rows A wrote after the fork"
fi
if grep -q "patroni-restore-command: not fetching $past_fork: timeline 1 ended at" "$dir/c.log"; then
  ok "the restore command said why it did not fetch $past_fork"
else
  fail "no line from the restore command refusing $past_fork in C's log"
fi
if grep -q "forked off current database system timeline 1 before current recovery point" "$dir/c.log"; then
  fail "C replayed timeline 1 past the fork: $(grep -m1 'forked off' "$dir/c.log")"
else
  ok "C never went past the fork (no 'forked off ... before current recovery point' in its log)"
fi
if restore_command_serves c "$before_fork"; then
  ok "the same command serves $before_fork, timeline 1 before the fork"
else
  fail "the command did not serve $before_fork, timeline 1 before the fork"
fi

finish c
