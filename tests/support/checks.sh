# Sourced by the shell suites: `step` lines named after the suite, `ok` lines, and `fail` lines
# counted in $failures (the suite ends with status 1 when it is not 0).
# shellcheck shell=bash
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }
step() { echo "[$(basename "$0" .sh) $(date +%T)] $*"; }
