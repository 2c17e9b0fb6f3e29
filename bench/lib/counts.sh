# Sourced by bench/api_bench.sh: what a request costs besides time, counted by someone other than
# the API where possible: statements (pg_stat_statements), commits (pg_stat_database), round
# trips (PgBouncer's SHOW STATS), PostgreSQL's client backends behind the pool, and allocations
# and system calls (bench/lib/allocations.sh). A count that cannot be read leaves its figure empty,
# which the verdicts show as "not measured".
# shellcheck shell=bash
# The parts share their variables: each sets some that the driver or another part reads.
# shellcheck disable=SC2034,SC2154

# Commits of the database at URL so far (pg_stat_database). A PostgreSQL 15 backend reports its
# counts when it goes idle, at most once a second and otherwise 10 s later: the API's pool stays
# connected, so its last second of commits shows up only then (wait STATS_SETTLE first).
commits_of() {  # url
  psql -X -Atq -v ON_ERROR_STOP=1 "$1" -c "/* api_bench */ SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
}
ratio() {  # numerator denominator [format]: prints nothing unless both are numbers and the denominator > 0
  awk -v a="$1" -v b="$2" -v f="${3:-%.3f}" 'BEGIN { if (a ~ /^-?[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf f, a / b }'
}
# idle_during RATE T0 T1: what a steady rate adds up to between two times (rounded)
idle_during() { awk -v r="${1:-0}" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", r * (b - a) }'; }

# --- statements per new key, counted by PostgreSQL while one API serves new keys: reset right
# before the run, read right after it, so that they hold that API's statements only (pgbench
# uses a database of its own, the other APIs are idle, the bench's own statements say api_bench).
statement_check_failed=0
statements_reset() {
  sql -c "/* api_bench */ SELECT pg_stat_statements_reset()" >/dev/null
  created0=$(sql -c "/* api_bench */ SELECT count(*) FROM idempotency_keys WHERE response_code = 201")
}
statements_read() {  # NAME (file name) DESCRIPTION [EXPECTED per key, default the script's]; sets per_key
  local name=$1 what=$2 expected=${3:-$sql_per_new_key} created1 statements created
  sleep 1  # requests in flight when wrk stopped finish
  created1=$(sql -c "/* api_bench */ SELECT count(*) FROM idempotency_keys WHERE response_code = 201")
  sql -F $'\t' -c "/* api_bench */ SELECT calls, left(regexp_replace(query, '\s+', ' ', 'g'), 110)
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
    WHERE d.datname = current_database() AND query NOT LIKE '%/* api_bench */%' ORDER BY calls DESC" \
    >"$dir/statements-$name.tsv"
  # The enqueuer wake-ups are not the request's SQL (see wakeup_notifies): counted apart.
  wakeup_statements=$(awk -F '\t' '$2 == "SELECT * FROM pg_notify($1, $2)" || $2 == "SET LOCAL statement_timeout = 5000" { n += $1 }
    END { print n + 0 }' "$dir/statements-$name.tsv")
  statements=$(awk -F '\t' '{ n += $1 } END { print n + 0 }' "$dir/statements-$name.tsv")
  statements=$((statements - wakeup_statements))
  created=$((created1 - created0))
  # Coalesced phases: one call of a batch form runs the phase of several keys.
  # For the check, every key whose phase did not run in a call of the single form counts one
  # statement, as if it had run alone: the SQL per request is the same, only shared.
  local batch single batch_calls single_calls batched
  for batch in rides_create_with_keys:rides_create_with_key rides_record_charges_and_finish:rides_record_charge_and_finish; do
    single=${batch#*:} batch=${batch%%:*}
    batch_calls=$(awk -F '\t' -v f="$batch(" 'index($2, f) { n += $1 } END { print n + 0 }' "$dir/statements-$name.tsv")
    single_calls=$(awk -F '\t' -v f="$single(" 'index($2, f) { n += $1 } END { print n + 0 }' "$dir/statements-$name.tsv")
    [ "$batch_calls" -gt 0 ] || continue
    batched=$((created - single_calls))
    echo "coalesced $single, $what: $batch_calls batch calls for $batched keys" \
      "($(awk -v b="$batch_calls" -v k="$batched" 'BEGIN { printf "%.1f", k / b }') keys a batch)"
    # A call is `expected / the script's` statements here (2 through PgBouncer: its SET LOCAL).
    statements=$(awk -v s="$statements" -v b="$batch_calls" -v k="$batched" \
      -v e="$expected" -v p="$sql_per_new_key" 'BEGIN { printf "%d", s + (k - b) * e / p }')
  done
  per_key=$(awk -v s="$statements" -v k="$created" 'BEGIN { if (k > 0) printf "%.3f", s / k; else print "nan" }')
  echo
  echo "statements per new key, $what: $per_key ($statements statements / $created keys answered 201, besides" \
    "$wakeup_statements of the enqueuer wake-up), expected $expected (the pgbench script: $sql_per_new_key)"
  if ! awk -v a="$per_key" -v p="$expected" 'BEGIN { d = a - p; if (d < 0) d = -d; exit !(a == a + 0 && d <= 0.02 * p) }'; then
    statement_check_failed=1
    echo "!!! STATEMENT COUNT MISMATCH: $what runs $per_key statements per new key, expected $expected" \
      "from the product's calls: the pgbench baseline is not the request's SQL. Statements seen (calls, query):" >&2
    head -n 20 "$dir/statements-$name.tsv" >&2
  fi
  echo "  per new key: calls / keys, query"
  awk -F '\t' -v k="$created" 'k > 0 && NR <= 12 { printf "  %6.3f  %s\n", $1 / k, $2 }' "$dir/statements-$name.tsv"
  echo
}

# --- what PostgreSQL counted in a database (pg_stat_database, pg_stat_user_tables), read between
# the runs after STATS_SETTLE, so that the API's pooled backends have reported (see commits_of):
# its commits, the keys answered 201 so far, and the updates and HOT updates of each hot table.
# Differences of these snapshots give the API's commits per new key at 32 and at 128 (around the
# single runs "API new keys 32" and "... 128") and, around all the API's new-key runs at 32 and 128
# (those two and every round), the HOT share of its updates; the article's database, which only
# its minimum SQL's rounds touch, the same for the article.
hot_tables=(idempotency_keys rides audit_records staged_jobs)
db_counts() {  # url: "name value" lines
  local names
  names=$(printf "'%s'," "${hot_tables[@]}")
  psql -X -Atq -F ' ' -v ON_ERROR_STOP=1 "$1" -c "/* api_bench */
    SELECT 'commits', xact_commit FROM pg_stat_database WHERE datname = current_database()
    UNION ALL SELECT 'keys_201', count(*) FROM idempotency_keys WHERE response_code = 201
    UNION ALL SELECT t.name || '.' || c.kind, coalesce(sum(CASE c.kind WHEN 'upd' THEN s.n_tup_upd ELSE s.n_tup_hot_upd END), 0)
      FROM unnest(ARRAY[${names%,}]) t(name) CROSS JOIN (VALUES ('upd'), ('hot')) c(kind)
      LEFT JOIN pg_stat_user_tables s ON s.relname = t.name GROUP BY t.name, c.kind"
}
stats_snapshot() {  # name: waits STATS_SETTLE, then keeps db_counts of the API's database and the article's
  sleep "$stats_settle"
  db_counts "$DATABASE_URL" >"$dir/stats-$1-api.txt" 2>>"$dir/stats.log" || rm -f "$dir/stats-$1-api.txt"
  if [ "$article_ok" = 1 ]; then
    db_counts "$article_url" >"$dir/stats-$1-article.txt" 2>>"$dir/stats.log" || rm -f "$dir/stats-$1-article.txt"
  fi
}
stats_delta() {  # from to db name: what name grew by between two snapshots of db, nothing without both
  local a b
  a=$(awk -v k="$4" '$1 == k { print $2 }' "$dir/stats-$1-$3.txt" 2>/dev/null) || true
  b=$(awk -v k="$4" '$1 == k { print $2 }' "$dir/stats-$2-$3.txt" 2>/dev/null) || true
  if [ -n "$a" ] && [ -n "$b" ]; then echo $((b - a)); fi
}
commits_per_key() {  # from to db: commits / keys answered 201 between two snapshots
  ratio "$(stats_delta "$1" "$2" "$3" commits)" "$(stats_delta "$1" "$2" "$3" keys_201)" %.2f
}

# The API's commits per new key at 32 and at 128, each from its single run: pg_stat_database
# after its pool's counts settled on both sides (a coalesced batch's commit counts once).
api_commits_per_key="" api_commits_per_key128=""
api_commits_read() {  # connections from to: sets api_commits_per_key (32) or api_commits_per_key128
  local per_key suffix=""
  per_key=$(commits_per_key "$2" "$3" api)
  [ "$1" = 32 ] || suffix=$1
  printf -v "api_commits_per_key$suffix" '%s' "$per_key"
  echo "commits per new key at $1, the API straight to PostgreSQL: ${per_key:-not measured}" \
    "($(stats_delta "$2" "$3" api commits) commits in pg_stat_database / $(stats_delta "$2" "$3" api keys_201) keys answered 201)"
  echo
}
# Around the whole group of new-key runs (from the snapshot before "API new keys 32" to the one
# after the rounds) for the HOT shares; around the rounds alone for the commits over them, the
# API's and the article minimum's (whose database only its runs touch: per pair answered 201).
rounds_commits_per_key="" article_commits=""
hot_read() {  # from-all from-rounds to: sets hot_api_TABLE and hot_article_TABLE ("updates hot-updates")
  local t db line upd hot
  echo "HOT updates (n_tup_hot_upd / n_tup_upd in pg_stat_user_tables) over the new-key runs at 32 and 128:"
  for db in api article; do
    line=""
    for t in "${hot_tables[@]}"; do
      upd=$(stats_delta "$1" "$3" "$db" "$t.upd")
      hot=$(stats_delta "$1" "$3" "$db" "$t.hot")
      if [ -n "$upd" ] && [ -n "$hot" ]; then printf -v "hot_${db}_$t" '%s %s' "$upd" "$hot"; fi
      line+=" $t ${hot:-?}/${upd:-?}"
    done
    if [ "$db" = api ]; then echo "  the API's new keys:$line"; else echo "  the article minimum SQL:$line"; fi
  done
  rounds_commits_per_key=$(commits_per_key "$2" "$3" api)
  article_commits=$(commits_per_key "$2" "$3" article)
  echo "  commits per new key over the rounds: the API ${rounds_commits_per_key:-not measured}," \
    "the article minimum ${article_commits:-not measured} per pair (its users lookup is a transaction of its own)"
  echo
}

# --- the minimum SQL's costs per request: its statements, from the script (pg_stat_statements
# counts a prepared BEGIN or COMMIT only at its first execution on a connection), each one round
# trip (the script has no pipeline: pgbench sends a command and waits for its answer); its commits
# from pg_stat_database around its first round's run (pgbench's backends report at exit, so a
# second is enough to settle).
minimum_commits="" minimum_commits0=""
script_statements() {  # pgbench script: its statements, each a round trip (nothing if it pipelines)
  awk '/^[[:space:]]*--/ { next } /^[[:space:]]*\\/ { if ($1 ~ /pipeline/) pipeline = 1; next }
    /;[[:space:]]*$/ || /\\gset/ { n++ } END { if (!pipeline && n > 0) print n }' "$1"
}
minimum_statements=$(script_statements "$minimum_sql")
article_statements=$(script_statements "$article_sql")
minimum_counts_begin() {
  sleep 1
  minimum_commits0=$(commits_of "$pgbench_url") || return 1
}
minimum_counts_end() {  # label of the run in between
  local commits1 done_tx
  [ -n "${minimum_commits0:-}" ] || return 1
  sleep 1
  commits1=$(commits_of "$pgbench_url") || return 1
  done_tx=$(awk -F '\t' -v l="$1" '$1 == l { split($2, v, " "); print v[4] }' "$dir/rows.tsv")
  minimum_commits=$(ratio "$((commits1 - minimum_commits0))" "$done_tx" %.2f)
  echo "  pgbench minimum SQL per request: ${minimum_statements:-?} statements (round trips) in the script," \
    "${minimum_commits:-?} commits ($((commits1 - minimum_commits0)) commits in pg_stat_database / $done_tx transactions)"
}

# --- database round trips, counted by PgBouncer: SHOW STATS on its admin console counts
# a "query" from a client's first message until PostgreSQL's ReadyForQuery, i.e. one round trip,
# and a transaction per server transaction, whatever the API thinks it sends. The pooled APIs'
# readiness pings go through PgBouncer too: their rate, measured idle, is taken off.
pgbouncer_counts() {  # prints "queries transactions" of database rocket_rides so far
  psql -X -A -F '|' -h 127.0.0.1 -p "$pgbouncer_port" -U postgres -d pgbouncer -c 'SHOW STATS' |
    awk -F'|' 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      $1 == "rocket_rides" { q = $col["total_query_count"]; x = $col["total_xact_count"] }
      END { if (q == "") exit 1; print q, x }'
}
rt_idle_rate="" rt_new_key="" xact_new_key="" rt_new_key128="" xact_new_key128="" rt_replay="" xact_replay="" rt_replays_sent=""
rt_idle() {  # sets rt_idle_rate: PgBouncer queries per second while no request is sent
  local q0 x0 q1 x1 t0 t1
  sleep 2  # the warm-ups' requests still in flight when wrk stopped finish first
  t0=$(now)
  read -r q0 x0 < <(pgbouncer_counts) || return 1
  sleep 5
  read -r q1 x1 < <(pgbouncer_counts) || return 1
  t1=$(now)
  rt_idle_rate=$(awk -v q=$((q1 - q0)) -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", q / (t1 - t0) }')
  rt_idle_xact=$(awk -v x=$((x1 - x0)) -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", x / (t1 - t0) }')
  echo "PgBouncer while idle: $rt_idle_rate round trips and $rt_idle_xact transactions a second (readiness pings)"
}
# Around one run of new keys through PgBouncer at 32 and one at 128: rt_new_begin before it,
# rt_new_end after it (after statements_read at 32). The keys answered 201 are counted in the
# database a second after the run, when the requests in flight when wrk stopped have finished.
# The enqueuer wake-ups (a debounced NOTIFY on the API's own background connection, at most one
# per ENQUEUER_WAKEUP_DEBOUNCE, not in any request's path) go through PgBouncer too: counted by
# pg_stat_statements (the only NOTIFYs in the database during the run), they are reported apart
# from the requests' round trips.
wakeup_notifies() {  # NOTIFYs run in the API's database so far
  sql -c "/* api_bench */ SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s
    JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() AND s.query = 'SELECT * FROM pg_notify(\$1, \$2)'"
}
keys_answered() { sql -c "/* api_bench */ SELECT count(*) FROM idempotency_keys WHERE response_code = 201"; }
rt_new_begin() {  # connections
  rt_t0=$(now)
  rt_w0=$(wakeup_notifies)
  rt_k0=$(keys_answered) || return 1
  read -r rt_q0 rt_x0 < <(pgbouncer_counts) || return 1
  if [ "$1" = 32 ]; then rt_id0=$(sql -c "/* api_bench */ SELECT coalesce(max(id), 0) FROM idempotency_keys") || return 1; fi
}
rt_new_end() {  # connections: sets rt_new_key, rt_wakeup, xact_new_key at 32 (with 128 after their names at 128)
  local q1 x1 t1 wakeups keys suffix=""
  [ "$1" = 32 ] || suffix=$1
  sleep 1
  read -r q1 x1 < <(pgbouncer_counts) || return 1
  t1=$(now)
  wakeups=$(($(wakeup_notifies) - rt_w0))
  keys=$(($(keys_answered) - rt_k0))
  if [ "$1" = 32 ]; then rt_id1=$(sql -c "/* api_bench */ SELECT coalesce(max(id), 0) FROM idempotency_keys") || return 1; fi
  printf -v "rt_new_key$suffix" '%s' \
    "$(ratio "$((q1 - rt_q0 - $(idle_during "$rt_idle_rate" "$rt_t0" "$t1") - wakeups))" "$keys" %.2f)"
  printf -v "rt_wakeup$suffix" '%s' "$(ratio "$wakeups" "$keys" %.3f)"
  printf -v "xact_new_key$suffix" '%s' \
    "$(ratio "$((x1 - rt_x0 - $(idle_during "${rt_idle_xact:-}" "$rt_t0" "$t1") - wakeups))" "$keys" %.2f)"
  local rt_name=rt_new_key$suffix xact_name=xact_new_key$suffix wakeup_name=rt_wakeup$suffix
  echo "round trips per new key at $1: ${!rt_name:-not measured} (PgBouncer: $((q1 - rt_q0)) queries, less the" \
    "idle rate and $wakeups enqueuer wake-ups, / $keys keys answered 201; transactions per new key:" \
    "${!xact_name:-?}; wake-ups per new key, on the API's own connection: ${!wakeup_name:-?})"
  echo
}
# Replays that are not in the API's memory: keys the first pooled API finished in that run, each
# replayed once to the second pooled API, which has never seen them (its memory holds only the
# keys it finished itself), so every answer comes from the database.
rt_replays() {
  local keys status q0 x0 q1 x1 t0 t1 out sent created other
  keys=$dir/replay-db-keys.txt
  sleep 2  # the last run's requests still in flight when wrk stopped finish first
  sql -c "/* api_bench */ SELECT idempotency_key FROM idempotency_keys WHERE id > $rt_id0 AND id <= $rt_id1
    AND response_code = 201 ORDER BY id LIMIT $replay_db_keys" >"$keys" || return 1
  [ -s "$keys" ] || { echo "  api_bench: no finished keys to replay" >&2; return 1; }
  # One request first, outside the count: the token's user may have left the API's cache
  # (TOKEN_CACHE_TTL) since its warm-up.
  status=$(post_rides "http://127.0.0.1:${pgb_ports[1]}" "$replay_key" "$dir/replay-db-first") || return 1
  [ "$status" = 201 ] || { echo "  api_bench: the second pooled API answered $status to a replay" >&2; return 1; }
  t0=$(now)
  read -r q0 x0 < <(pgbouncer_counts) || return 1
  out=$(python3 bench/api_bench/replay_each.py 127.0.0.1 "${pgb_ports[1]}" "$token" "$request_body" "$keys") || return 1
  read -r q1 x1 < <(pgbouncer_counts) || return 1
  t1=$(now)
  sent=$(echo "$out" | sed -n 's/.* sent=\([0-9]*\).*/\1/p')
  created=$(echo "$out" | sed -n 's/.* s201=\([0-9]*\).*/\1/p')
  other=$(echo "$out" | sed -n 's/.* other=\([0-9]*\).*/\1/p')
  rt_replays_sent=$sent
  rt_replay=$(ratio "$((q1 - q0 - $(idle_during "$rt_idle_rate" "$t0" "$t1")))" "$created" %.2f)
  xact_replay=$(ratio "$((x1 - x0 - $(idle_during "${rt_idle_xact:-}" "$t0" "$t1")))" "$created" %.2f)
  echo "round trips per replay from the database: ${rt_replay:-not measured} (PgBouncer: $((q1 - q0)) queries," \
    "less the idle rate, / $created replays answered 201 of $sent sent, $other other, first other: $(echo "$out" |
      sed -n 's/.* first_other=\([^ ]*\).*/\1/p'); transactions per replay: ${xact_replay:-?};" \
    "$(awk -v n="$sent" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }') replays/s, one at a time)"
  echo
}

# --- PostgreSQL's client backends in the API's database, sampled every 0.5 s during the HAProxy
# run (the sampler's own session left out), against the pool's bound. Started as the run's
# before_load, after measure's CHECKPOINT, whose session would otherwise count.
start_sampler() {
  # shellcheck disable=SC2016
  DATABASE_URL=$DATABASE_URL bash -c 'while :; do
    psql -X -Atq "$DATABASE_URL" -c "/* api_bench */ SELECT count(*) FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = '\''client backend'\'' AND pid <> pg_backend_pid()" || true
    sleep 0.5
  done' >"$dir/pg_backends.txt" 2>&1 &
  sampler_pid=$!
  pids+=("$sampler_pid")
}
sampler_read() {  # stops the sampler; sets pg_backends_max, pg_backends_samples and the pool's bound
  stop_process "$sampler_pid"
  pg_backends_max=$(awk '/^[0-9]+$/ { if ($1 > m) m = $1; n++ } END { print m + 0 }' "$dir/pg_backends.txt")
  pg_backends_samples=$(grep -c '^[0-9][0-9]*$' "$dir/pg_backends.txt" || true)
  # The bound: every client here uses one database and one role, so PgBouncer has one pool, which
  # never holds more than default_pool_size + reserve_pool_size server connections;
  # max_db_connections (the cap across all pools of the database) is looser, unless set lower.
  pool_bound=$((pool_size + reserve_pool_size))
  pool_bound_text="default_pool_size $pool_size + reserve_pool_size $reserve_pool_size"
  if [ "$max_db_connections" -gt 0 ] && [ "$max_db_connections" -lt "$pool_bound" ]; then
    pool_bound=$max_db_connections
    pool_bound_text="max_db_connections $max_db_connections"
  fi
}
# What HAProxy saw, from its log once it has stopped: an API taken out of rotation (and why),
# both out, requests it answered itself because no API was UP ("<NOSRV>"). Its state changes
# appear twice in the log (stderr and the log line): the "[WARNING]" ones are counted.
haproxy_counts() {
  haproxy_downs=$(grep -c '^\[WARNING\].* is DOWN' "$dir/haproxy.log" || true)
  haproxy_none=$(grep -c '^\[ALERT\].*has no server available' "$dir/haproxy.log" || true)
  haproxy_down_reason=$(grep -m1 '^\[WARNING\].* is DOWN' "$dir/haproxy.log" | sed 's/.*reason: //; s/, check duration.*//' || true)
  haproxy_nosrv=$(grep -c '<NOSRV>' "$dir/haproxy.log" || true)
  if [ "$haproxy_downs" -gt 0 ]; then
    echo "  HAProxy took an API out $haproxy_downs times (first: $haproxy_down_reason), both at once" \
      "$haproxy_none times, and answered $haproxy_nosrv requests itself with no API UP; its first state changes:"
    { grep -E '^\[WARNING\].* is (DOWN|UP)' "$dir/haproxy.log" || true; } | head -n 8 |
      sed 's/^\[WARNING\] *([0-9]*) : /    /; s/, check duration.*//' || true
  fi
}
