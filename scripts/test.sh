#!/usr/bin/env bash
# The README's test command: installs what is missing, builds with AddressSanitizer and
# UndefinedBehaviorSanitizer, starts throwaway PostgreSQL and Redis, runs every test under
# CTest, and stops the servers whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# CMAKE_UNITY_BUILD: each library's files compiled in batches of eight, as the package is built;
# on a fresh machine the build takes about 10 minutes instead of 15 (docs/testing.md).
# clang 14 (installed for the fuzz trees): the sanitized debug build costs it about a third less
# CPU than GCC 12, most of the build being the suites' own files. GCC still compiles every shipped
# file in the same run: the package test builds the packages as Debian does (docs/testing.md).
scripts/build.sh build-test -DCMAKE_CXX_COMPILER=clang++-14 -DROCKET_RIDES_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DROCKET_RIDES_SHARED_FOLDERS=ON -DCMAKE_UNITY_BUILD=ON

# psql, pg_dump and pg_isready in /usr/bin are Debian's pg_wrapper, a Perl script that picks a
# version and then runs it: 0.06 CPU-seconds a call over the binary's own 0.03, and the suites call
# them several hundred times a run. They get the binaries of the version local-servers.sh runs,
# chosen by the same rrsuite function.
# shellcheck source=scripts/python3.sh
. scripts/python3.sh
pg_bin=$(PYTHONPATH=tools "$python3" -c 'from rrsuite.postgres import pg_bin; print(pg_bin())')
export PATH=$pg_bin:$PATH

# The kernel's session autogroups (kernel.sched_autogroup_enabled) share the CPU between sessions,
# not processes, whatever a process's nice: pg_ctl, Patroni and the harness's detached servers each
# start a session, so the servers of the fault profiles and the package build, run under
# `nice -n 10` so that the test beside them comes first, competed with it at full weight (two
# HTTP suites that need most of a core for an I/O thread failed beside the restore profile). Off
# for the run where this script may change it (as root), and put back after.
autogroup=/proc/sys/kernel/sched_autogroup_enabled
autogroup_was=
if [[ -w $autogroup ]] && [[ $(cat "$autogroup") != 0 ]]; then
  autogroup_was=$(cat "$autogroup")
  echo 0 >"$autogroup"
  echo "test.sh: kernel.sched_autogroup_enabled is 0 for this run (nice applies across sessions); put back after" >&2
fi

servers_dir=$(mktemp -d /tmp/rocket-rides-test.XXXXXX)
cleanup() {
  scripts/local-servers.sh stop "$servers_dir" || true
  rm -rf "$servers_dir"
  if [[ -n $autogroup_was ]]; then echo "$autogroup_was" >"$autogroup" || true; fi
}
trap cleanup EXIT INT TERM
# pg_stat_statements: tests that bound what reaches PostgreSQL (auth_failure_throttle_test)
# read its counts, which move as each statement ends.
server_env=$(PG_EXTRA_OPTS=${PG_EXTRA_OPTS:-"-c shared_preload_libraries=pg_stat_statements"} \
  scripts/local-servers.sh start "$servers_dir" --fast)
eval "$server_env"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp}

ctest --test-dir build-test --output-on-failure --parallel 2 "$@"
