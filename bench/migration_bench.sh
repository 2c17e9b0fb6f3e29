#!/usr/bin/env bash
# How long sql/012-014 (the HOT-friendly schema, the 201 stored without its body) take on a database of KEYS finished keys
# (default 1,000,000, each with its ride, audit record and no staged job left), and whether
# writers notice: pgbench runs the minimum SQL of new keys (bench/minimum_sql.sql) at 8 clients
# during the whole migration, and the script prints the migration's time, the longest new-key
# transaction while it ran against the longest one before it, and the schema it ends with.
#
#   bench/migration_bench.sh BIN_DIR     (rocket-rides-api from any build)
#   env: KEYS=1000000
# Starts its own durable PostgreSQL on a free loopback port in a temporary directory, as the
# postgres user, and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cd "${1:?usage: bench/migration_bench.sh BIN_DIR}" && pwd)
keys=${KEYS:-1000000}
pgbin=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin | sort -V | tail -1)
dir=$(mktemp -d)
chmod 755 "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() {
  runuser -u postgres -- "$pgbin/pg_ctl" -D "$dir/pg" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
# initdb and pg_ctl start as tools/rrsuite runs them (postgres.py), with this bench's own settings.
rrsuite_server() { PYTHONPATH="$PWD/tools${PYTHONPATH:+:$PYTHONPATH}" python3 -m rrsuite server "$@"; }
rrsuite_server postgres-init "$dir/pg" "$dir/initdb.log"
rrsuite_server postgres-start "$dir/pg" "$dir/pg/log" 60 \
  "-p $port -k $dir/pg -c listen_addresses=127.0.0.1 -c shared_buffers=256MB -c max_wal_size=4GB"
export PGOPTIONS="-c client_min_messages=warning"
psql=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres)
"${psql[@]}" -c "CREATE DATABASE rocket_rides"
url="postgresql://postgres@127.0.0.1:$port/rocket_rides"

# The schema as a deployed database has it before 012: the numbered migrations up to 011, recorded.
for f in sql/0[01][0-9]_*.sql; do
  v=$((10#$(basename "$f" | cut -c1-3)))
  [ "$v" -le 11 ] || continue
  "${psql[@]}" -d rocket_rides -f "$f"
done
"${psql[@]}" -d rocket_rides -c "CREATE TABLE schema_migrations (version INT PRIMARY KEY, name TEXT NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
  INSERT INTO schema_migrations (version, name) SELECT g, 'before 012' FROM generate_series(1, 11) g;"
user_id=$("${psql[@]}" -d rocket_rides -Atc "INSERT INTO users (email, stripe_customer_id)
  VALUES ('bench@example.com', 'cus_bench') RETURNING id" | head -1)

started=$(date +%s.%N)
"${psql[@]}" -d rocket_rides <<SQL
INSERT INTO idempotency_keys (user_id, idempotency_key, request_method, request_path, request_params, origin_ip,
    recovery_point, response_code, response_body, locked_at, created_at, last_run_at)
SELECT $user_id, 'migration-bench-key-' || g, 'POST', '/rides',
       '{"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712}', '127.0.0.1',
       'finished', 201, '{"message":"Ride created and charged."}', NULL,
       now() - interval '48 hours' + g * interval '100 microseconds', now()
FROM generate_series(1, $keys) g;
INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, stripe_charge_id, user_id)
SELECT id, 37.7749, -122.4194, 37.8044, -122.2712, 'ch_' || id, user_id FROM idempotency_keys;
INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
SELECT 'create_ride', request_params, '127.0.0.1', id, 'ride', user_id FROM idempotency_keys;
VACUUM ANALYZE;
SQL
printf 'loaded %s keys with their rides and audit records in %.0f s\n' "$keys" "$(echo "$(date +%s.%N) - $started" | bc)"

# Writers before and during the migration: the longest new-key transaction pair in each span.
# pgbench runs in 2 s pieces so that each writes its whole log (an interrupted one would not).
# The minimum SQL stores a finished 201 without its body, which only 013 allows: the writers here
# store a short body, valid before, during and after the migration.
sed 's/response_body = NULL,/response_body = '"'"'{}'"'"',/' bench/minimum_sql.sql >"$dir/writer.sql"
grep -q "response_body = '{}'," "$dir/writer.sql" || { echo "migration_bench: cannot adapt bench/minimum_sql.sql" >&2; exit 1; }
pgbench_piece() {  # log-prefix
  (cd "$dir" && pgbench -n -M prepared -h 127.0.0.1 -p "$port" -U postgres -c 8 -j 2 -T 2 \
    -f "$dir/writer.sql" -D "user_id=$user_id" -l --log-prefix="$1" rocket_rides >>"$1.out" 2>&1) ||
    { echo "migration_bench: pgbench failed during $1:" >&2; tail -3 "$dir/$1.out" >&2; }
}
max_latency_ms() { cat "$dir/$1".[0-9]* | awk '{ if ($3 > m) m = $3 } END { printf "%.1f", m / 1000 }'; }
transactions() { cat "$dir/$1".[0-9]* | wc -l; }

for i in $(seq 1 5); do pgbench_piece "before$i"; done
(n=0; while [ ! -e "$dir/migrated" ]; do n=$((n + 1)); pgbench_piece "during$n"; done) &
writers=$!
sleep 2
migrate_started=$(date +%s.%N)
env -i PATH="$PATH" DATABASE_URL="$url" "$bin/rocket-rides-api" migrate >"$dir/migrate.log" 2>&1 ||
  { cat "$dir/migrate.log" >&2; touch "$dir/migrated"; exit 1; }
migrate_s=$(echo "$(date +%s.%N) - $migrate_started" | bc)
touch "$dir/migrated"
wait "$writers" || true
cat "$dir"/before*.[0-9]* >"$dir/before.all.0"
cat "$dir"/during*.[0-9]* >"$dir/during.all.0"

printf 'migrate to 012-014 on %s keys: %.1f s\n' "$keys" "$migrate_s"
printf 'longest new-key transaction pair (8 pgbench clients): %s ms in 10 s before (%s pairs), %s ms during the migration (%s pairs)\n' \
  "$(max_latency_ms before.all)" "$(transactions before.all)" "$(max_latency_ms during.all)" "$(transactions during.all)"
"${psql[@]}" -d rocket_rides -Atc "SELECT 'indexes on the hot tables: ' || string_agg(indexrelid::regclass::text, ' ')
  FROM pg_index WHERE indrelid IN ('idempotency_keys'::regclass, 'rides'::regclass, 'audit_records'::regclass,
  'staged_jobs'::regclass)"
"${psql[@]}" -d rocket_rides -Atc "SELECT 'invalid indexes: ' || count(*) FROM pg_index WHERE NOT indisvalid"
