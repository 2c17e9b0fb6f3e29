#!/usr/bin/env bash
# scripts/cluster.sh's APIs believe X-Forwarded-For from HAProxy alone: a request sent straight to
# an API from 127.0.0.1 (where every local client connects from) with a forged header is stored
# with origin_ip 127.0.0.1, and one through HAProxy with its real client's address, whatever that
# client forged. Needs haproxy and pgbouncer (scripts/install-deps.sh); about 50 s with the
# sanitized build, most of it starting the cluster.
#
#   tests/scripts/cluster_trusted_proxy_test.sh BIN_DIR
set -euo pipefail
bin_dir=${1:?usage: $0 BIN_DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
cluster=$repo/scripts/cluster.sh
dir=$(mktemp -d /tmp/rr-cluster-proxy.XXXXXX)
cleanup() {
  "$cluster" stop "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
eval "$("$cluster" start "$dir" --bin-dir "$bin_dir")"

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# post_ride URL KEY [curl options]: the status of a POST /rides with the demo rider's token.
post_ride() {
  local url=$1 key=$2
  shift 2
  curl -sS -o /dev/null -w '%{http_code}' --max-time 20 "$@" -X POST "$url/rides" \
    -H "Authorization: Bearer $ROCKET_RIDES_TOKEN" -H "Idempotency-Key: $key" \
    -d origin_lat=37.7749 -d origin_lon=-122.4194 -d target_lat=37.8044 -d target_lon=-122.2712
}

origin_of() {
  psql -X -At "$DIRECT_DATABASE_URL" -c "SELECT host(origin_ip) FROM idempotency_keys WHERE idempotency_key = '$1'"
}

# expect_origin WHAT KEY STATUS WANT: the request answered 201 and its key row names WANT.
expect_origin() {
  local what=$1 key=$2 status=$3 want=$4 got
  if [ "$status" != 201 ]; then
    fail "$what: status $status, not 201"
    return
  fi
  got=$(origin_of "$key")
  if [ "$got" = "$want" ]; then
    echo "ok: $what: origin_ip $got"
  else
    fail "$what: origin_ip '$got', want $want"
  fi
}

key=proxy-test-direct-$(cat /proc/sys/kernel/random/uuid)
status=$(post_ride "http://$API1_ADDRESS" "$key" -H "X-Forwarded-For: 203.0.113.7")
expect_origin "straight to api1 from 127.0.0.1 with X-Forwarded-For: 203.0.113.7" "$key" "$status" 127.0.0.1

key=proxy-test-balanced-$(cat /proc/sys/kernel/random/uuid)
status=$(post_ride "$API_URL" "$key" --interface 127.0.0.5 -H "X-Forwarded-For: 203.0.113.9")
expect_origin "through HAProxy from 127.0.0.5 with X-Forwarded-For: 203.0.113.9" "$key" "$status" 127.0.0.5

key=proxy-test-balanced-local-$(cat /proc/sys/kernel/random/uuid)
status=$(post_ride "$API_URL" "$key")
expect_origin "through HAProxy from 127.0.0.1" "$key" "$status" 127.0.0.1

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed; the APIs' trusted proxies and the end of api1's log:" >&2
  grep '^API_TRUSTED_PROXIES=' "$dir/app.env" >&2 || true
  tail -n 20 "$dir/logs/api1.log" >&2
  exit 1
fi
echo "all checks passed"
