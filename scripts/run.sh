#!/usr/bin/env bash
# The README's run command: installs what is missing, builds, starts a local PostgreSQL and Redis
# (kept in .local/ between runs), migrates, creates a demo user, and runs the whole suite with
# demo traffic under foreman. Ctrl-C stops the suite and the local servers.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# Only what the suite runs: the tests build in the test command (scripts/test.sh, build-test/).
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROCKET_RIDES_TESTS=OFF

mkdir -p .local
servers_dir=$PWD/.local/servers
stop_servers() { scripts/local-servers.sh stop "$servers_dir" || true; }
trap stop_servers EXIT
# --archive: the demo's database can be backed up and restored like production's
# (scripts/local-servers.sh backup|backups|restore .local/servers, README "Backups and restore").
server_env=$(scripts/local-servers.sh start "$servers_dir" --archive)
eval "$server_env"

build/bin/rocket-rides-api migrate

demo_email=demo@rocketrides.example
if ! token=$(build/bin/rocket-rides-api user create --email "$demo_email" --stripe-customer cus_demo 2>/dev/null); then
  token=$(build/bin/rocket-rides-api user token --email "$demo_email")
fi

# The secret the provider idempotency keys derive from (PROVIDER_KEY_SECRET): 32 random bytes,
# made once and kept in .local/ beside the database, because a new secret on an old database would
# change the provider keys of its unfinished requests.
provider_key_secret_file=.local/provider-key-secret
if [[ ! -s $provider_key_secret_file ]]; then
  (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$provider_key_secret_file.new")
  mv "$provider_key_secret_file.new" "$provider_key_secret_file"
fi

api_port=${API_PORT:-5000}
mock_port=${STRIPE_MOCK_PORT:-12111}
# Demo settings: the completer's thresholds are shortened so abandoned requests are finished
# within a minute, and the stand-in provider fails some charges so that there are some.
# Every value quoted (scripts/env-file.sh): Procfile runners other than foreman cut unquoted
# values at `#`.
source scripts/env-file.sh
{
  env_file_line DATABASE_URL "$DATABASE_URL"
  env_file_line REDIS_URL "$REDIS_URL"
  env_file_line API_PORT "$api_port"
  env_file_line STRIPE_MOCK_PORT "$mock_port"
  env_file_line STRIPE_API_BASE "http://127.0.0.1:$mock_port"
  env_file_line STRIPE_API_KEY sk_test_rocket_rides_demo
  env_file_line PROVIDER_KEY_SECRET "$(cat "$provider_key_secret_file")"
  env_file_line STRIPE_TIMEOUT 2
  env_file_line IDEMPOTENCY_KEY_LOCK_TIMEOUT 10
  env_file_line COMPLETER_MIN_AGE 15
  env_file_line COMPLETER_LAST_RUN_THRESHOLD 5
  env_file_line COMPLETER_IDLE_SLEEP 5
  env_file_line MOCK_FAILURE_RATE 0.15
  env_file_line MOCK_LATENCY_MS 20
  env_file_line SIMULATOR_API_URL "http://127.0.0.1:$api_port"
  env_file_line SIMULATOR_TOKEN "$token"
  env_file_line SIMULATOR_RATE 2
  env_file_line SIMULATOR_ABANDON_RATE 0.3
} >.local/suite.env.new
mv .local/suite.env.new .local/suite.env

cat <<MSG
Suite starting. Book a ride from the browser: open http://127.0.0.1:$api_port/ and sign in
with the demo rider's API token:
  $token
Or from another terminal:
  curl -i -X POST http://127.0.0.1:$api_port/rides \\
    -H 'Authorization: Bearer $token' \\
    -H "Idempotency-Key: \$(cat /proc/sys/kernel/random/uuid)" \\
    -d origin_lat=37.7749 -d origin_lon=-122.4194 -d target_lat=37.8044 -d target_lon=-122.2712
MSG
foreman start -f Procfile -e .local/suite.env -d "$PWD"
