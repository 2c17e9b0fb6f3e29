"""bench/fuzz_long.sh: a long fuzzing run. Every target in turn for its share of HOURS (default 1),
each on every core (libFuzzer's -fork, one process per core), then what it found that adds
coverage merged into its corpus (fuzz/corpus/TARGET/, to commit). Prints executions per second and
in total per target (scripts/fuzz.sh does), and fails, naming the saved inputs, when a target
crashed. See docs/testing.md#fuzzing.

  bench/fuzz_long.sh [HOURS] [TARGET...]      env: FUZZ_LONG_WORKERS (default: the cores)"""

import glob
import os
import subprocess

from .base import BenchError, SCRIPTS, cores, say, warn
from rrsuite.paths import REPO


def main(argv):
    os.chdir(REPO)
    hours = argv[0] if argv and argv[0] else "1"
    targets = list(argv[1:]) or [os.path.basename(s)[:-len(".cpp")] for s in sorted(glob.glob("fuzz/*.cpp"))]
    try:
        seconds_each = max(60, int(float(hours) * 3600 / len(targets)))
    except ValueError:
        raise BenchError("HOURS is a number, not %r" % hours, 2)
    workers = os.environ.get("FUZZ_LONG_WORKERS") or str(cores())
    fuzz = os.path.join(SCRIPTS, "fuzz.sh")

    if subprocess.run([fuzz, "--build"]).returncode != 0:
        raise BenchError("scripts/fuzz.sh --build failed")
    say("fuzz_long: %d targets, %ds each on %s processes" % (len(targets), seconds_each, workers))
    failed = []
    for target in targets:
        # The fork mode keeps fuzzing past a crash (saving each) so that one finding does not end
        # hours of search; the run still fails at the end.
        env = dict(os.environ, FUZZ_FORK=workers,
                   FUZZ_EXTRA_FLAGS="-ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1")
        if subprocess.run([fuzz, "--no-build", "--merge", target, str(seconds_each)], env=env).returncode != 0:
            failed.append(target)
    if failed:
        warn("fuzz_long: findings in: %s (inputs under build-fuzz/artifacts/)" % " ".join(failed))
        return 1
    return 0
