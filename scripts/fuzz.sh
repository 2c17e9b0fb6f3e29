#!/usr/bin/env bash
# Fuzzes the parsers with libFuzzer (clang-14, AddressSanitizer and UndefinedBehaviorSanitizer), in
# a build folder of its own. See docs/testing.md#fuzzing.
#
#   scripts/fuzz.sh [--merge] [TARGET] [SECONDS]  builds, then fuzzes TARGET (default: every target)
#                                                 for SECONDS each (default 60); fails, printing the
#                                                 saved input's path, on any crash, failed property,
#                                                 leak, timeout or out-of-memory
#   scripts/fuzz.sh --build                       only configures and builds build-fuzz/
#   scripts/fuzz.sh --no-build [TARGET] [SECONDS] fuzzes with the build-fuzz/ there is (CTest's
#                                                 fuzz_run_* tests, after their fuzz_build fixture)
#   scripts/fuzz.sh --minimize [TARGET]           shrinks a corpus to the inputs that add coverage
#   scripts/fuzz.sh --coverage                    replays every corpus under clang's source-based
#                                                 coverage (build-coverage/) and fails when a parser
#                                                 file is under 90 % of its lines
#
# Inputs a run finds go to build-fuzz/found/TARGET/, not into the repository, unless --merge is
# given: then the ones that add coverage are merged (-merge=1) into fuzz/corpus/TARGET/. A crash's
# input is saved under build-fuzz/artifacts/TARGET/. Each target may tune libFuzzer's flags in
# fuzz/TARGET.options (OSS-Fuzz's format: a [libfuzzer] section of `name = value` lines).
# FUZZ_FORK=N runs N fuzzing processes per target (libFuzzer's -fork; bench/fuzz_long.sh uses it);
# FUZZ_EXTRA_FLAGS adds libFuzzer flags to every run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-$root/build-fuzz}
COVERAGE_BUILD_DIR=${COVERAGE_BUILD_DIR:-$root/build-coverage}
CLANGXX=${CLANGXX:-clang++-14}
LLVM_PROFDATA=${LLVM_PROFDATA:-llvm-profdata-14}
LLVM_COV=${LLVM_COV:-llvm-cov-14}
COVERAGE_MIN_LINES=${COVERAGE_MIN_LINES:-90}
FUZZ_FORK=${FUZZ_FORK:-0}
FUZZ_EXTRA_FLAGS=${FUZZ_EXTRA_FLAGS:-}
# The parser files held to COVERAGE_MIN_LINES, one path a line.
PARSER_FILES=$root/fuzz/support/parser_files.txt

mode=run
merge=0
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) mode=build ;;
    --coverage) mode=coverage ;;
    --minimize) mode=minimize ;;
    --merge) merge=1 ;;
    --no-build) build=0 ;;
    -h | --help)
      awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
      exit 0
      ;;
    -*)
      echo "fuzz.sh: unknown option $1" >&2
      exit 2
      ;;
    *) break ;;
  esac
  shift
done
# TARGET may be left out: `scripts/fuzz.sh 20` fuzzes every target for 20 s.
if [[ ${1:-} =~ ^[0-9]+$ ]]; then set -- "" "$1"; fi
only_target=${1:-}
seconds=${2:-60}

# Every target, from the files that define them (fuzz/NAME.cpp).
all_targets() {
  local source
  for source in "$root"/fuzz/*.cpp; do
    basename "$source" .cpp
  done
}

targets=()
if [ -n "$only_target" ]; then
  if [ ! -f "$root/fuzz/$only_target.cpp" ]; then
    echo "fuzz.sh: no target $only_target (fuzz/$only_target.cpp); targets: $(all_targets | tr '\n' ' ')" >&2
    exit 2
  fi
  targets=("$only_target")
else
  mapfile -t targets < <(all_targets)
fi

# configure_and_build DIR ENGINE: a tree of its own (CMake keeps one compiler per tree) holding only
# the fuzz targets and the library files they reach (ROCKET_RIDES_FUZZ_ONLY).
configure_and_build() {
  local dir=$1 engine=$2
  if ! command -v "$CLANGXX" >/dev/null; then
    echo "fuzz.sh: $CLANGXX not found; scripts/install-deps.sh installs clang-14 and libclang-rt-14-dev" >&2
    exit 2
  fi
  # -O1 rather than a release build: fast enough, and Beast's and Boost's own assertions stay on
  # (no NDEBUG), so a broken invariant inside them is a crash too.
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$CLANGXX" -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DROCKET_RIDES_FUZZ_ONLY=ON -DROCKET_RIDES_TESTS=OFF \
    -DROCKET_RIDES_TCMALLOC=OFF -DROCKET_RIDES_FUZZ_ENGINE="$engine" >/dev/null
  cmake --build "$dir" --target fuzz_targets --parallel "$(nproc)"
}

# libFuzzer's flags for a target: ours, then its fuzz/TARGET.options (which win, being later).
target_flags() {
  local target=$1 options=$root/fuzz/$1.options
  # Per input: a parser call is micro- to milliseconds, so 5 s is a hang, not a slow input.
  echo "-timeout=5"
  echo "-rss_limit_mb=2048"
  echo "-max_len=4096"
  if [ -f "$root/fuzz/dict/$target.dict" ]; then echo "-dict=$root/fuzz/dict/$target.dict"; fi
  if [ -f "$options" ]; then
    awk '/^\[/ { section = $0; next }
         section == "[libfuzzer]" && /=/ {
           split($0, kv, "="); gsub(/[ \t]/, "", kv[1]); value = substr($0, index($0, "=") + 1)
           gsub(/^[ \t]+|[ \t]+$/, "", value); print "-" kv[1] "=" value }' "$options"
  fi
}

# Whatever the caller set (scripts/test.sh sets both), every finding ends the run, and the only
# findings left alone are those in fuzz/support/ubsan.supp (code that is not ours).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1:suppressions=$root/fuzz/support/ubsan.supp"

# fuzz_one TARGET SECONDS: 0 when the run ended without a finding.
fuzz_one() {
  local target=$1 seconds=$2
  local binary=$FUZZ_BUILD_DIR/fuzz/fuzz_$target
  local corpus=$root/fuzz/corpus/$target
  local found=$FUZZ_BUILD_DIR/found/$target
  local artifacts=$FUZZ_BUILD_DIR/artifacts/$target
  local log=$FUZZ_BUILD_DIR/logs/$target.log
  mkdir -p "$corpus" "$found" "$artifacts" "$(dirname "$log")"
  local target_flags flags
  mapfile -t target_flags < <(target_flags "$target")
  flags=("${target_flags[@]}")
  if [ "$FUZZ_FORK" -gt 0 ]; then flags+=("-fork=$FUZZ_FORK"); fi
  # shellcheck disable=SC2206 # flags separated by spaces, as on a command line
  flags+=($FUZZ_EXTRA_FLAGS)
  echo "fuzz.sh: $target for ${seconds}s (${flags[*]})"
  local status=0 started=$FUZZ_BUILD_DIR/logs/$target.started
  touch "$started"
  # New inputs go to the first folder given, the scratch one; the corpus is read, never written.
  "$binary" "${flags[@]}" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$found" "$corpus" >"$log" 2>&1 || status=$?

  # Executions: the final stats (one process), or the last status line (-fork's parent).
  local executions per_second
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  per_second=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [ -z "$executions" ]; then
    executions=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/^#\([0-9]*\).*/\1/p')
  fi
  # -fork's parent reports no rate of its own: the executions over the time asked.
  if [ -z "$per_second" ] || [ "$per_second" = 0 ]; then per_second=$((${executions:-0} / seconds)); fi
  echo "fuzz.sh: $target: ${executions:-0} executions, ${per_second:-0} exec/s, $(find "$found" -type f | wc -l) inputs found so far in $found"

  # A finding is a non-zero exit, or (-fork with -ignore_crashes goes on after one) an input saved.
  local saved
  saved=$(find "$artifacts" -newer "$started" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) | sort)
  if [ "$status" -ne 0 ] || [ -n "$saved" ]; then
    echo "fuzz.sh: $target FAILED (libFuzzer exit $status); from its log, $log:" >&2
    grep -E 'ERROR: |fuzz property failed|SUMMARY: |runtime error: |Test unit written to' "$log" | head -20 >&2 || true
    local input
    for input in $saved; do
      echo "fuzz.sh: input saved in $input; replay it with $binary $input" >&2
    done
    return 1
  fi
  if [ "$merge" -eq 1 ]; then
    echo "fuzz.sh: merging what $target found into fuzz/corpus/$target/"
    # Without -fork and the flags that only a fuzzing run takes: a merge with -fork fuzzes instead.
    "$binary" -merge=1 "${target_flags[@]}" "$corpus" "$found" >>"$log" 2>&1
    rm -rf "$found"
  fi
  return 0
}

minimize_one() {
  local target=$1
  local binary=$FUZZ_BUILD_DIR/fuzz/fuzz_$target
  local corpus=$root/fuzz/corpus/$target
  local smaller
  smaller=$(mktemp -d)
  local flags
  mapfile -t flags < <(target_flags "$target")
  "$binary" -merge=1 "${flags[@]}" "$smaller" "$corpus" >"$FUZZ_BUILD_DIR/logs/$target.minimize.log" 2>&1
  echo "fuzz.sh: $target: $(find "$corpus" -type f | wc -l) inputs -> $(find "$smaller" -type f | wc -l)"
  rm -f "$corpus"/*
  mv "$smaller"/* "$corpus"/
  rmdir "$smaller"
}

coverage() {
  # ccache's base_dir (if set) would write the files' paths relative to the build folder into the
  # coverage mapping, and llvm-cov's report then matches no file named to it.
  CCACHE_BASEDIR='' configure_and_build "$COVERAGE_BUILD_DIR" coverage
  local profiles=$COVERAGE_BUILD_DIR/profiles
  rm -rf "$profiles"
  mkdir -p "$profiles"
  local objects=() target
  for target in "${targets[@]}"; do
    local binary=$COVERAGE_BUILD_DIR/fuzz/fuzz_$target
    if ! LLVM_PROFILE_FILE="$profiles/$target.profraw" "$binary" "$root/fuzz/corpus/$target" \
      >"$profiles/$target.log" 2>&1; then
      echo "fuzz.sh: replaying fuzz/corpus/$target/ failed; see $profiles/$target.log" >&2
      exit 1
    fi
    objects+=(-object "$binary")
  done
  "$LLVM_PROFDATA" merge -sparse "$profiles"/*.profraw -o "$profiles/merged.profdata"
  # The first object is the main one; llvm-cov wants it without -object.
  "$LLVM_COV" export -summary-only -instr-profile="$profiles/merged.profdata" "${objects[@]:1}" \
    >"$profiles/summary.json"
  # The parser files as the coverage mapping names them, for llvm-cov's report; then the threshold.
  local mapped=()
  mapfile -t mapped < <(python3 - "$profiles/summary.json" "$root" "$PARSER_FILES" <<'EOF'
import json, os, sys
summary, root, listing = sys.argv[1:]
names = {os.path.normpath(f["filename"]): f["filename"] for f in json.load(open(summary))["data"][0]["files"]}
for line in open(listing):
    path = line.split("#")[0].strip()
    if path and os.path.join(root, path) in names:
        print(names[os.path.join(root, path)])
EOF
  )
  if [ ${#mapped[@]} -gt 0 ]; then
    "$LLVM_COV" report -instr-profile="$profiles/merged.profdata" -show-branch-summary "${objects[@]:1}" \
      "${mapped[@]}"
  fi
  python3 - "$profiles/summary.json" "$COVERAGE_MIN_LINES" "$root" "$PARSER_FILES" <<'EOF'
import json, os, sys
summary, minimum, root, listing = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
covered = {os.path.normpath(f["filename"]): f["summary"] for f in json.load(open(summary))["data"][0]["files"]}
failed = False
for line in open(listing):
    name = line.split("#")[0].strip()
    if not name:
        continue
    summary = covered.get(os.path.join(root, name))
    if summary is None:
        print(f"fuzz.sh: {name}: not reached by any target", file=sys.stderr)
        failed = True
        continue
    lines, branches = summary["lines"], summary["branches"]
    print(f"fuzz.sh: {name}: lines {lines['percent']:.1f} % ({lines['covered']}/{lines['count']}), "
          f"branches {branches['percent']:.1f} % ({branches['covered']}/{branches['count']})")
    if lines["percent"] < minimum:
        print(f"fuzz.sh: {name}: under {minimum:g} % of lines", file=sys.stderr)
        failed = True
print("fuzz.sh: coverage " + ("FAILED" if failed else f"holds: every parser file at {minimum:g} % of lines or more"))
sys.exit(1 if failed else 0)
EOF
}

case "$mode" in
  build)
    configure_and_build "$FUZZ_BUILD_DIR" libfuzzer
    ;;
  coverage)
    coverage
    ;;
  minimize)
    configure_and_build "$FUZZ_BUILD_DIR" libfuzzer
    mkdir -p "$FUZZ_BUILD_DIR/logs"
    for target in "${targets[@]}"; do minimize_one "$target"; done
    ;;
  run)
    # Tests running side by side share one tree: only their fixture builds it.
    if [ "$build" -eq 1 ]; then configure_and_build "$FUZZ_BUILD_DIR" libfuzzer; fi
    failed=()
    for target in "${targets[@]}"; do
      fuzz_one "$target" "$seconds" || failed+=("$target")
    done
    if [ ${#failed[@]} -gt 0 ]; then
      echo "fuzz.sh: findings in: ${failed[*]}" >&2
      exit 1
    fi
    ;;
esac
