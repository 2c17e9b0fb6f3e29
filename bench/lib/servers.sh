# Sourced by bench/api_bench.sh: the servers the bench starts, each on a free loopback port, and
# the work directory that holds their data, logs and the rows. Every process started is in pids,
# so that the exit, however it comes, stops them all.
# Reads $bin (the binaries); sets dir, DATABASE_URL and the *_url, *_port and *_pid variables.
# shellcheck shell=bash
# The parts share their variables: each sets some that the driver or another part reads.
# shellcheck disable=SC2034,SC2154

now() { date +%s.%N; }
# One server started as tools/rrsuite starts it (servers_cli.py: its command line, configuration
# and readiness wait written there once), detached; prints its pid.
rrsuite_server() { PYTHONPATH="$PWD/tools${PYTHONPATH:+:$PYTHONPATH}" python3 -m rrsuite server "$@"; }
# Until a pid is gone (the servers are not this shell's children: `wait` cannot).
wait_gone() {  # pid
  for _ in $(seq 1 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
}
sql() { psql -X -Atq -v ON_ERROR_STOP=1 "$DATABASE_URL" "$@"; }

# --- the work directory, removed at exit (its logs kept elsewhere when the bench fails)
workdir_create() {
  dir=$(mktemp -d /tmp/rocket-rides-apibench.XXXXXX)
  chmod 755 "$dir"  # the servers run as postgres when we are root
  pids=()
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait_gone "$pid"; done
  scripts/local-servers.sh stop "$dir/servers" >/dev/null 2>&1 || true
  if [ "$status" -ne 0 ]; then
    # Keep the logs (not the data directory) for a look at what went wrong.
    local logs
    logs=$(mktemp -d /tmp/rocket-rides-apibench-logs.XXXXXX)
    cp "$dir"/*.log "$dir"/*.out "$dir/servers/pg/server.log" "$logs/" 2>/dev/null || true
    echo "api_bench: failed (exit $status); logs kept in $logs" >&2
  fi
  rm -rf "$dir"
  exit "$status"
}
stop_process() {  # pid: stops one the bench started and waits for it
  kill "$1" 2>/dev/null || true
  wait_gone "$1"
}
free_port() {  # taken-ports...: a free port that is none of them (pick_port cannot know the ones reserved
  # by servers that are not listening yet)
  local port taken
  port=$(pick_port) || return 1
  for taken in "$@"; do
    if [ "$port" = "$taken" ]; then free_port "$@"; return; fi
  done
  echo "$port"
}

# --- PostgreSQL (durable, pg_stat_statements) and Redis; the API's database and pgbench's own,
# migrated, each with a user; the article's schema in a third; the stand-in provider; the API
# straight to PostgreSQL.
start_servers() {
  echo "starting durable PostgreSQL (pg_stat_statements) and Redis..."
  local servers_env
  servers_env=$(PG_EXTRA_OPTS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=on -c pg_stat_statements.max=10000" \
    scripts/local-servers.sh start "$dir/servers")
  eval "$servers_env"
  pgbench_url=${DATABASE_URL%/*}/rocket_rides_pgbench
  sql -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
  sql -c "CREATE DATABASE rocket_rides_pgbench"

  "$bin/rocket-rides-api" migrate >"$dir/migrate.log" 2>&1
  DATABASE_URL=$pgbench_url "$bin/rocket-rides-api" migrate >>"$dir/migrate.log" 2>&1
  token=$("$bin/rocket-rides-api" user create --email bench@rocketrides.example --stripe-customer cus_bench 2>>"$dir/migrate.log")
  DATABASE_URL=$pgbench_url "$bin/rocket-rides-api" user create --email pgbench@rocketrides.example \
    --stripe-customer cus_bench >/dev/null 2>>"$dir/migrate.log"
  pgbench_user=$(psql -X -Atq "$pgbench_url" -c "SELECT id FROM users WHERE email = 'pgbench@rocketrides.example'")

  # The article's floor: the seed article's schema (bench/article_schema.sql, a verbatim copy) in a
  # database of its own, for the "pgbench article minimum SQL" rows. Loading it may fail without
  # ending the bench (those rows are then left out and their verdicts read "not measured").
  article_url=${DATABASE_URL%/*}/article
  article_ok=1
  if ! { sql -c "CREATE DATABASE article" &&
    psql -X -q -v ON_ERROR_STOP=1 "$article_url" -f bench/article_schema.sql; } >"$dir/article-schema.log" 2>&1; then
    article_ok=0
    echo "api_bench: bench/article_schema.sql could not be loaded; the article minimum SQL rows are left out:" >&2
    tail -n 5 "$dir/article-schema.log" >&2
  fi

  mock_port=$(free_port)
  # The stand-in provider with no injected failures, drops or latency.
  mock_pid=$(STRIPE_API_KEY=sk_bench MOCK_FAILURE_RATE=0 MOCK_DROP_RATE=0 MOCK_LATENCY_MS=0 \
    rrsuite_server provider "$bin" "$mock_port" "$dir/mock.log")
  pids+=("$mock_pid")
  api_port=$(free_port "$mock_port")
  start_api "$api_port" "$dir/api.log"
  api_pid=$started_pid
  # Whose CPU the "api" column shows (bench/lib/cpu.sh): every API the bench runs.
  api_pids=("$api_pid")
  wait_port "$mock_port"
  wait_port "$api_port"
  api_url=http://127.0.0.1:$api_port
}
# An API on port PORT, logging to LOG (no LOG_LEVEL knob exists, so its logs go to a file), with
# the environment given before the call; sets started_pid. wrk sends all its connections (up to
# 512) with one user's token, which API_MAX_IN_FLIGHT_PER_USER (8 by default) would refuse with
# 429: this measures throughput, not the per-user limit.
start_api() {  # port log
  started_pid=$(STRIPE_API_BASE=http://127.0.0.1:$mock_port STRIPE_API_KEY=sk_bench API_MAX_IN_FLIGHT_PER_USER=1024 \
    rrsuite_server api "$bin" "$1" "$2")
  pids+=("$started_pid")
}

# The body of every POST /rides here (bench/api_bench/common.lua sends the same).
request_body='{"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712}'
post_rides() {  # base-url key output-prefix: POST /rides as the wrk scripts send it; prints the status
  curl -s -D "$3.headers" -o "$3.body" -w '%{http_code}' -X POST "$1/rides" \
    -H "Authorization: Bearer $token" -H "Idempotency-Key: $2" -H "Content-Type: application/json" \
    -d "$request_body"
}

# --- nginx answering POST /rides with the bytes of the API's replay answer: the same
# request, the same answer, nothing else done. Returns 1, having said why, if it cannot.
nginx_pid=""
nginx_start() {
  local status
  status=$(post_rides "$api_url" "$replay_key" "$dir/replay-answer") || return 1
  [ "$status" = 201 ] || { echo "  api_bench: the replay answered $status" >&2; return 1; }
  nginx_port=$(free_port "$mock_port" "$api_port") || return 1
  python3 bench/api_bench/nginx_same_answer.py "$dir/replay-answer.headers" "$dir/replay-answer.body" \
    "$nginx_port" "$dir/nginx" || return 1
  nginx -p "$dir/nginx/" -c "$dir/nginx/nginx.conf" -e "$dir/nginx/error.log" -g 'daemon off;' \
    </dev/null >"$dir/nginx.log" 2>&1 &
  nginx_pid=$!
  pids+=("$nginx_pid")
  wait_port "$nginx_port" || { cat "$dir/nginx.log" "$dir/nginx/error.log" >&2 2>/dev/null; return 1; }
  status=$(post_rides "http://127.0.0.1:$nginx_port" "$replay_key" "$dir/nginx-answer") || return 1
  if [ "$status" != 201 ] || ! cmp -s "$dir/replay-answer.body" "$dir/nginx-answer.body"; then
    echo "  api_bench: nginx answers $status with a body other than the API's" >&2
    return 1
  fi
  header_names() { tr -d '\r' <"$1" | awk -F: 'NR > 1 && NF > 1 { printf "%s%s", (n++ ? ", " : ""), $1 }'; }
  echo "nginx (port $nginx_port) answers POST /rides as the API replays: 201, the same" \
    "$(wc -c <"$dir/replay-answer.body")-byte body; headers API: $(header_names "$dir/replay-answer.headers");" \
    "nginx: $(header_names "$dir/nginx-answer.headers")"
}

# --- PgBouncer running deploy/pgbouncer.ini, its site file written by the same code as
# scripts/cluster.sh's (tools/rrsuite/pgbouncer.py), and two APIs through it without prepared
# statements (the production topology). Sets pooled_url, pgb_pids, pgb_ports, pgb_url and
# the pool's settings.
start_pgbouncer() {
  local pg_port i port
  pg_port=$(sed -n 's/^PG_PORT=//p' "$dir/servers/ports")
  pgbouncer_port=$(pick_port)
  echo
  echo "starting PgBouncer (deploy/pgbouncer.ini) and two APIs through it (DATABASE_PREPARED_STATEMENTS=off)..."
  # The site file, PgBouncer as postgres (it refuses root), a query through it, its policy checked.
  pgbouncer_pid=$(rrsuite_server pgbouncer "$dir/pgbouncer" "$pg_port" "$pgbouncer_port" "$dir/pgbouncer.log" \
    "bench/api_bench.sh for this run") || { echo "api_bench: PgBouncer:" >&2; tail -n 20 "$dir/pgbouncer.log" >&2; exit 1; }
  pids+=("$pgbouncer_pid")
  proxy_pids+=("$pgbouncer_pid")
  pooled_url=postgresql://postgres@127.0.0.1:$pgbouncer_port/rocket_rides
  pool_size=$(pgbouncer_setting default_pool_size)
  reserve_pool_size=$(pgbouncer_setting reserve_pool_size)
  max_db_connections=$(pgbouncer_setting max_db_connections)
  pgb_ports=()
  pgb_pids=()
  for i in 1 2; do
    port=$(free_port "$mock_port" "$api_port" "$pgbouncer_port" "${pgb_ports[0]:-}")
    DATABASE_URL=$pooled_url DATABASE_PREPARED_STATEMENTS=off start_api "$port" "$dir/api-pgbouncer$i.log"
    pgb_pids+=("$started_pid")
    pgb_ports+=("$port")
    api_pids+=("$started_pid")
  done
  for port in "${pgb_ports[@]}"; do
    wait_port "$port"
    warm_up "http://127.0.0.1:$port"
  done
  pgb_url=http://127.0.0.1:${pgb_ports[0]}
}
pgbouncer_setting() {  # name: its value in PgBouncer's SHOW CONFIG
  psql -X -At -h 127.0.0.1 -p "$pgbouncer_port" -U postgres -d pgbouncer -c 'SHOW CONFIG' |
    awk -F'|' -v k="$1" '$1 == k { print $2 }'
}
# An API's connections, prepared statements and token cache, warmed outside the measured runs.
warm_up() {  # url
  BENCH_TOKEN=$token BENCH_RUN=warmup-$RANDOM$RANDOM wrk -t2 -c32 -d3s -s bench/api_bench/new_keys.lua "$1" \
    >>"$dir/warmup.out" 2>&1
}

# --- HAProxy running deploy/haproxy.cfg in front of the two APIs through PgBouncer.
start_haproxy() {
  haproxy_port=$(pick_port)
  haproxy_stats_port=$(free_port "$haproxy_port")
  echo "starting HAProxy (deploy/haproxy.cfg) in front of the two APIs through PgBouncer..."
  haproxy_pid=$(rrsuite_server haproxy "$haproxy_port" "$haproxy_stats_port" "${pgb_ports[0]}" "${pgb_ports[1]}" \
    "$dir/haproxy.log") || { echo "api_bench: HAProxy:" >&2; tail -n 20 "$dir/haproxy.log" >&2; exit 1; }
  pids+=("$haproxy_pid")
  proxy_pids+=("$haproxy_pid")
  for _ in $(seq 1 100); do
    if haproxy_up; then break; fi
    kill -0 "$haproxy_pid" 2>/dev/null || { echo "api_bench: HAProxy exited:" >&2; tail -n 20 "$dir/haproxy.log" >&2; exit 1; }
    sleep 0.1
  done
  haproxy_up || { echo "api_bench: HAProxy does not report both APIs UP after 10 s" >&2; exit 1; }
}
haproxy_up() {  # both APIs UP in HAProxy's stats
  curl -fsS --max-time 2 "http://127.0.0.1:$haproxy_stats_port/stats;csv" 2>/dev/null |
    awk -F, '$1 == "apis" && ($2 == "api1" || $2 == "api2") && $18 == "UP" { n++ } END { exit n != 2 }'
}
