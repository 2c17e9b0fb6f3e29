#!/usr/bin/env bash
# Every binary prints the suite's one version, debian/changelog's top entry (read here by dpkg's own
# parser, not by the CMake expression that compiled it in), as "NAME VERSION" on --version, and
# answers --help with "NAME - summary" and a Usage line, which its manual page is made from.
#   tests/processes/version_test.sh BIN_DIR
set -euo pipefail
bin_dir=$1
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
expected=$(dpkg-parsechangelog -l "$source_dir/debian/changelog" -S Version)
failures=0
for program in rocket-rides-api rocket-rides-enqueuer rocket-rides-completer rocket-rides-reaper \
               rocket-rides-stripe-mock rocket-rides-simulator; do
  # No configuration at all: --version and --help must not need any.
  version=$(env -i "$bin_dir/$program" --version) || { echo "FAIL $program --version exited $?"; failures=$((failures + 1)); continue; }
  if [[ $version != "$program $expected" ]]; then
    echo "FAIL $program --version printed '$version', debian/changelog says '$expected'"
    failures=$((failures + 1))
  fi
  help=$(env -i "$bin_dir/$program" --help) || { echo "FAIL $program --help exited $?"; failures=$((failures + 1)); continue; }
  if [[ $(head -1 <<<"$help") != "$program - "* ]] || ! grep -q "^Usage: $program" <<<"$help"; then
    echo "FAIL $program --help lacks its 'NAME - summary' line or its Usage line:"
    echo "$help"
    failures=$((failures + 1))
  fi
done
if ((failures)); then exit 1; fi
echo "ok: six binaries print version $expected and their help"
