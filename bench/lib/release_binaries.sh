# Sourced by the benches that measure the API: the Release binaries they run, built once if
# missing, and the tools they need.
# shellcheck shell=bash

# release_binaries BUILD_DIR: sets bin (absolute) to BUILD_DIR/bin, configuring and building
# BUILD_DIR as Release first if the API, the stand-in provider or the pgbench script printer is
# not there.
release_binaries() {
  local b
  for b in rocket-rides-api rocket-rides-stripe-mock rocket-rides-bench-sql; do
    if [ ! -x "$1/bin/$b" ]; then
      scripts/build.sh "$1" -DCMAKE_BUILD_TYPE=Release -DROCKET_RIDES_TESTS=OFF
      break
    fi
  done
  bin=$(cd "$1/bin" && pwd)  # BUILD_DIR may be relative or absolute
}

# require_tools NAME TOOL...: exits, naming the first TOOL that is not installed.
require_tools() {
  local name=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$name: $tool is not installed" >&2; exit 1; }
  done
}
