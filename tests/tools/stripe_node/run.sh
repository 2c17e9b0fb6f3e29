#!/usr/bin/env bash
# The stripe-node conformance test (CTest's stripe_node_conformance): installs the official Stripe
# client library, pinned, from npm into a cache (once; later runs reuse it), then runs
# conformance.js, which starts rocket-rides-stripe-mock and drives the library against it.
#
# Environment:
#   ROCKET_RIDES_STRIPE_MOCK  the mock binary (CTest sets build-dir/bin/rocket-rides-stripe-mock)
#   STRIPE_NODE_CACHE         where installs are kept, one directory per version (CTest sets
#                             build-dir/stripe-node; default ~/.cache/rocket-rides/stripe-node)
#   STRIPE_NODE_VERSION       the version to install (default: the pin below)
#
# An npm registry that cannot be reached fails the test, with npm's own error: a conformance
# test that silently skips would pass on a machine that checked nothing.
set -euo pipefail

# stripe-node 22.6.2: the newest release whose declared engines (node >= 18) include Debian 12's
# Node.js 18.20. Releases 23.x require node >= 20 (they pass these cases on Debian's 18 too, but
# their maintainers no longer support it).
PINNED_VERSION=22.6.2
version=${STRIPE_NODE_VERSION:-$PINNED_VERSION}
cache=${STRIPE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocket-rides/stripe-node}
here=$(cd "$(dirname "$0")" && pwd)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

command -v node >/dev/null || fail "node is not installed (scripts/install-deps.sh installs Debian's nodejs)"
command -v npm >/dev/null || fail "npm is not installed (scripts/install-deps.sh installs Debian's npm)"
[ -n "${ROCKET_RIDES_STRIPE_MOCK:-}" ] || fail "ROCKET_RIDES_STRIPE_MOCK is not set (the mock binary)"
[ -x "$ROCKET_RIDES_STRIPE_MOCK" ] || fail "no executable mock at $ROCKET_RIDES_STRIPE_MOCK (build first)"

install_dir="$cache/$version"
installed_version() {
  node -e 'try { console.log(require(process.argv[1]).version) } catch (e) { }' \
    "$install_dir/node_modules/stripe/package.json"
}

if [ "$(installed_version)" != "$version" ]; then
  echo "installing stripe@$version from $(npm config get registry 2>/dev/null) into $install_dir" >&2
  mkdir -p "$cache"
  staging=$(mktemp -d "$cache/.install-$version.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  # Bounded: an unreachable registry fails in about a minute, not after npm's long backoff.
  if ! timeout 180 npm install --prefix "$staging" --no-audit --no-fund --ignore-scripts --no-save \
    --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000 --fetch-timeout=30000 \
    "stripe@$version" >"$staging.log" 2>&1; then
    cat "$staging.log" >&2
    rm -f "$staging.log"
    fail "could not install stripe@$version from the npm registry ($(npm config get registry 2>/dev/null));" \
      "the conformance test needs it: check the network or the registry setting"
  fi
  rm -f "$staging.log"
  # Whole or not at all: a later run never finds a half-finished install.
  rm -rf "$install_dir"
  mv "$staging" "$install_dir"
  trap - EXIT
  [ "$(installed_version)" = "$version" ] || fail "npm installed something other than stripe@$version"
fi

NODE_PATH="$install_dir/node_modules" STRIPE_NODE_VERSION="$version" exec node "$here/conformance.js"
