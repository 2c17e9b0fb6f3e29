#!/usr/bin/env bash
# scripts/env-file.sh (what scripts/run.sh writes its env file with) read back by Debian's
# ruby-foreman exactly as `foreman start -e` loads it (`foreman run -e` runs one command with the
# same loader): a Redis password with `#`, spaces, quotes, `$`, backslashes survive byte for byte,
# every value is quoted (node-foreman cuts unquoted ones at `#`), and values no runner can read
# back are refused.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/env-file.sh"
dir=$(mktemp -d /tmp/rr-env-file.XXXXXX)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

names=()
values=()
add() {
  names+=("$1")
  values+=("$2")
}
add REDIS_URL 'redis://:pa#ss word@127.0.0.1:6379/0'
add HASH_FIRST '#not a comment'
add SPACES '  leading and trailing  '
add SHELL_TEXT 'p$HOME`id`$(id)'
add BACKSLASHES 'C:\dir\n\t\\'
add DOUBLE_QUOTES 'say "hi" # there'
add SINGLE_QUOTE "it's #1"
add EMPTY ''
add EQUALS 'a=b==c'
add UTF8 'mot de passe é #ü'

for i in "${!names[@]}"; do env_file_line "${names[$i]}" "${values[$i]}"; done >"$dir/test.env"

# Quoted, every line: what node-foreman needs to keep a `#`.
while IFS= read -r line; do
  [[ $line =~ ^[A-Z0-9_]+=(\'.*\'|\".*\")$ ]] || fail "unquoted line: $line"
done <"$dir/test.env"

# foreman loads the file into the environment of the command it runs; printenv -0 prints each
# named value followed by a NUL, in the order asked.
(cd "$dir" && foreman run -e "$dir/test.env" printenv -0 "${names[@]}") >"$dir/read-back"
read_back=()
while IFS= read -r -d '' value; do read_back+=("$value"); done <"$dir/read-back"
[ "${#read_back[@]}" -eq "${#names[@]}" ] || fail "foreman gave ${#read_back[@]} values for ${#names[@]} names"
for i in "${!names[@]}"; do
  [ "${read_back[$i]-<missing>}" == "${values[$i]}" ] ||
    fail "${names[$i]}: wrote [${values[$i]}], foreman read [${read_back[$i]-<missing>}]"
done

# Refused, with a message naming the variable, rather than written for some runner to misread.
refuses() {
  local name=$1 value=$2 err
  if err=$(env_file_line "$name" "$value" 2>&1 >/dev/null); then
    fail "$name: accepted [$value]"
  elif [[ $err != *"$name"* ]]; then
    fail "$name: refused without naming it: $err"
  fi
}
refuses LINE_BREAK $'one\ntwo'
refuses CARRIAGE_RETURN $'one\rtwo'
refuses BOTH_QUOTES "it's \"quoted\""
refuses QUOTE_AND_BACKSLASH "it's a\\b"
refuses 'BAD-NAME' 'x'

if [ "$failures" -gt 0 ]; then
  echo "env file: $failures failure(s)" >&2
  exit 1
fi
echo "env file: ${#names[@]} values read back by foreman exactly, 5 unreadable values refused"
