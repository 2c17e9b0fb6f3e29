#!/usr/bin/env bash
# The completer re-drives stored keys and never reads a request: what it links holds the flows
# (rr::flows) and none of the API's request parsing (rr::api, common/api_requests/ and above).
# "What it links" is the executable and, in the test build where common/'s folders are shared
# libraries, every one of ours it loads.
#   completer_links_no_request_parsing.sh COMPLETER
set -euo pipefail
completer=$1
files=("$completer")
while read -r library; do
  files+=("$library")
done < <(ldd "$completer" | awk '$1 ~ /^librr_/ { print $3 }')
symbols=$(nm -C --defined-only "${files[@]}" 2>/dev/null) || { echo "nm failed on ${files[*]}" >&2; exit 2; }
if ! grep -q 'rr::flows::' <<<"$symbols"; then
  echo "no rr::flows:: symbol in ${files[*]}: the check looks at the wrong files" >&2
  exit 2
fi
if grep -m3 'rr::api::' <<<"$symbols"; then
  echo "the completer links the API's request parsing (above)" >&2
  exit 1
fi
echo "completer: ${#files[@]} files, rr::flows linked, no rr::api"
