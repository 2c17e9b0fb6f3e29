#!/usr/bin/env bash
# The OpenAPI tests (CTest's openapi_*): docs/openapi.yaml linted, checked against the live API,
# and used by a typed client. The npm tools they need are pinned by tests/openapi/package-lock.json
# and installed from it with `npm ci` into the build directory (once per lockfile; later runs reuse
# them, offline).
#
#   run.sh install   npm ci from the lockfile into OPENAPI_TOOLS_DIR, unless that lockfile is installed
#   run.sh lint      Redocly CLI `lint` with the recommended rules, every warning an error
#   run.sh checker   checker_selftest.js: the live-traffic checker finds answers the document lacks
#   run.sh live      live_traffic.js: every answer of the real API checked against the document
#   run.sh client    TypeScript types generated from the document (openapi-typescript), a client
#                    over them (openapi-fetch) compiled with tsc and run against the real API
#
# Environment:
#   OPENAPI_TOOLS_DIR     where the tools are installed (CTest sets build-dir/openapi-tools;
#                         default ~/.cache/rocket-rides/openapi-tools)
#   OPENAPI_DOCUMENT      the document to check (default docs/openapi.yaml; a copy shows the
#                         checks failing on purpose: docs/testing.md)
#   ROCKET_RIDES_BIN_DIR  the build's bin directory (live, client); DATABASE_URL as for every suite
#
# An npm registry that cannot be reached fails the install with npm's own error: a contract test
# that silently skips would pass on a machine that checked nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
tools=${OPENAPI_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rocket-rides/openapi-tools}
document=${OPENAPI_DOCUMENT:-$source_dir/docs/openapi.yaml}
# No telemetry and no update check from Redocly CLI: the test talks to nothing but the API.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

command -v node >/dev/null || fail "node is not installed (scripts/install-deps.sh installs Debian's nodejs)"

installed() {
  cmp -s "$here/package-lock.json" "$tools/package-lock.json" && [ -f "$tools/node_modules/.package-lock.json" ]
}

install() {
  if installed; then
    echo "the pinned tools are installed in $tools"
    return
  fi
  command -v npm >/dev/null || fail "npm is not installed (scripts/install-deps.sh installs Debian's npm)"
  echo "installing the tools pinned by tests/openapi/package-lock.json from $(npm config get registry 2>/dev/null) into $tools" >&2
  mkdir -p "$(dirname "$tools")"
  staging=$(mktemp -d "$tools.install.XXXXXX")
  trap 'rm -rf "$staging" "$staging.log"' EXIT
  cp "$here/package.json" "$here/package-lock.json" "$staging/"
  # Exactly the lockfile's versions and integrity hashes; no install scripts run. Bounded: an
  # unreachable registry fails in a few minutes, not after npm's long backoff.
  if ! (cd "$staging" && timeout 300 npm ci --no-audit --no-fund --ignore-scripts --fetch-retries=1 \
    --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000 --fetch-timeout=60000) >"$staging.log" 2>&1; then
    cat "$staging.log" >&2
    fail "could not install the pinned OpenAPI tools from the npm registry ($(npm config get registry 2>/dev/null));" \
      "the OpenAPI tests need them: check the network or the registry setting"
  fi
  # Whole or not at all: a later run never finds a half-finished install.
  rm -rf "$tools"
  mv "$staging" "$tools"
  rm -f "$staging.log"
  trap - EXIT
  installed || fail "the install in $tools does not match tests/openapi/package-lock.json"
}

require_tools() {
  installed || fail "the pinned tools are not installed in $tools: run '$0 install' (CTest's openapi_tools)"
}

case "${1:-}" in
  install)
    install
    ;;
  lint)
    require_tools
    "$tools/node_modules/.bin/redocly" lint --config "$here/redocly.yaml" --format=stylish "$document"
    ;;
  checker)
    require_tools
    NODE_PATH="$tools/node_modules" OPENAPI_DOCUMENT="$document" exec node "$here/checker_selftest.js"
    ;;
  live)
    require_tools
    NODE_PATH="$tools/node_modules" OPENAPI_DOCUMENT="$document" exec node "$here/live_traffic.js"
    ;;
  client)
    require_tools
    # Inside the tools directory, so the compiled client resolves openapi-fetch from its node_modules.
    work=$(mktemp -d "$tools/client.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    "$tools/node_modules/.bin/openapi-typescript" "$document" --output "$work/rocket-rides-api.ts"
    cp "$here/client.mts" "$here/tsconfig.json" "$work/"
    "$tools/node_modules/.bin/tsc" --project "$work/tsconfig.json"
    NODE_PATH="$tools/node_modules" node "$here/client_test.js" "$work/client.mjs"
    ;;
  *)
    fail "usage: $0 install|lint|checker|live|client"
    ;;
esac
