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
# refused_in_one_line WHAT PATTERN COMMAND...: COMMAND must fail, saying exactly one line that
# holds PATTERN (grep's basic regular expression).
refused_in_one_line() {
  local what=$1 pattern=$2 err
  shift 2
  if err=$("$@" 2>&1); then
    fail "$what succeeded: $err"
  elif [ "$(echo "$err" | grep -c .)" = 1 ] && grep -q "$pattern" <<<"$err"; then
    ok "$what refused in one line: $err"
  else
    fail "$what: want one line with '$pattern', got: $err"
  fi
}
