#!/usr/bin/env bash
# A long fuzzing run: every target in turn for its share of HOURS (default 1), each on every core
# (libFuzzer's -fork, one process per core), then what it found that adds coverage merged into its
# corpus (fuzz/corpus/TARGET/, to commit). Prints executions per second and in total per target, and
# fails, naming the saved inputs, when a target crashed. See docs/testing.md#fuzzing.
#
#   bench/fuzz_long.sh [HOURS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."

hours=${1:-1}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in fuzz/*.cpp; do targets+=("$(basename "$source" .cpp)"); done
fi
seconds_each=$(python3 -c "print(max(60, int(float('$hours') * 3600 / ${#targets[@]})))")
workers=${FUZZ_LONG_WORKERS:-$(nproc)}

scripts/fuzz.sh --build
echo "fuzz_long: ${#targets[@]} targets, ${seconds_each}s each on $workers processes"
failed=()
for target in "${targets[@]}"; do
  # The fork mode keeps fuzzing past a crash (saving each) so that one finding does not end hours
  # of search; the run still fails at the end.
  if ! FUZZ_FORK=$workers FUZZ_EXTRA_FLAGS="-ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1" \
    scripts/fuzz.sh --no-build --merge "$target" "$seconds_each"; then
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz_long: findings in: ${failed[*]} (inputs under build-fuzz/artifacts/)" >&2
  exit 1
fi
