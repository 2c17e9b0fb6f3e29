# Sourced by scripts/run.sh (and tests/scripts/env_file_test.sh): writes lines of a Procfile runner's env
# file so that every runner reads back the exact value. Unquoted values are not safe: node-foreman
# cuts them at `#` (a Redis password "pa#ss" would arrive as "pa") and trims them. Single quotes
# are read verbatim by foreman (Ruby), node-foreman, honcho and dotenv alike; a value holding a
# single quote goes in double quotes, which node-foreman also reads verbatim but foreman and
# honcho unescape, so it must then hold no backslash or double quote. No runner reads a newline
# inside a value. Anything else is refused rather than written so that some runner misreads it.

# env_file_line NAME VALUE: prints NAME='VALUE' (or NAME="VALUE"), or fails naming the variable.
env_file_line() {
  local name=$1 value=$2
  if [[ ! $name =~ ^[A-Za-z_][A-Za-z_0-9]*$ ]]; then
    echo "env file: invalid variable name '$name'" >&2
    return 1
  fi
  if [[ $value == *$'\n'* || $value == *$'\r'* ]]; then
    echo "env file: $name holds a line break, which no Procfile runner reads" >&2
    return 1
  fi
  if [[ $value != *"'"* ]]; then
    printf "%s='%s'\n" "$name" "$value"
  elif [[ $value != *'"'* && $value != *'\'* ]]; then
    printf '%s="%s"\n' "$name" "$value"
  else
    echo "env file: $name holds a single quote together with a double quote or backslash, which Procfile runners disagree on" >&2
    return 1
  fi
}
