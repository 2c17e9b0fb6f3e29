#!/usr/bin/env bash
# Installs the Debian 12 packages the suite needs. Idempotent: does nothing when all are present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  libboost1.81-dev libboost-test1.81-dev libboost-program-options1.81-dev
  libpqxx-dev libpq-dev libhiredis-dev rapidjson-dev prometheus-cpp-dev libboost-url1.81-dev libboost-context1.81-dev libssl-dev libsystemd-dev
  # tcmalloc_minimal, the allocator every binary links outside sanitized builds (CMakeLists.txt).
  libgoogle-perftools-dev
  postgresql-15 redis-server pgbouncer haproxy ruby-foreman curl ca-certificates wrk
  systemd procps iproute2 python3 nodejs
  # Tests only: Debian's Sidekiq 6.4 works the enqueuer's jobs (tests/jobs/sidekiq_compat_test.cpp);
  # promtool checks deploy/prometheus-alerts.yml. The prometheus package also ships the server,
  # which its unit starts on :9090 where systemd runs; stop or mask it if that is unwanted.
  ruby-sidekiq prometheus
  # Sentinel tests, the sentinel-short fault profile and scripts/local-servers.sh --sentinel.
  # Its unit starts a sentinel on :26379 where systemd runs; stop or mask it if that is unwanted.
  redis-sentinel
  # The HA shape (scripts/cluster.sh start --ha): Patroni 3.0 over a three-member etcd 3.4, and
  # etcdctl for the script's `leader`. Where systemd runs, etcd-server's unit starts a member on
  # :2379; stop or mask it if that is unwanted.
  patroni etcd-server etcd-client
  # Backups and point-in-time restore in both shapes (tools/rrsuite/backup.py): WAL archiving and
  # backups through pgBackRest 2.45.
  pgbackrest
  # The browser suite (tests/browser/): Debian's Chromium in headless mode, its chromedriver and
  # Selenium for Debian's python3, which drives them.
  chromium chromium-driver python3-selenium
  # Fuzzing (scripts/fuzz.sh, the fuzz_build and fuzz_run_* tests): clang 14, libFuzzer's runtime
  # (only recommended by libclang-common-14-dev, so named here), llvm-cov-14 and llvm-profdata-14.
  clang-14 libclang-rt-14-dev llvm-14
  # The Debian packages (debian/, tests/package_test.sh, CTest label `package`): the package build,
  # the manual pages from --help, lintian, and the throw-away Debian root the packages install into.
  debhelper help2man lintian debootstrap
  # bench/api_bench.sh only: a throwaway nginx answers the API's replay bytes beside the API.
  # Where systemd runs, its unit starts nginx on :80; stop or mask it if that is unwanted.
  nginx-light
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

# npm for the stripe-node conformance test. Only when no npm is on the PATH: a Node.js from
# elsewhere (NodeSource's nodejs bundles npm and conflicts with Debian's npm package) already has it.
if ! command -v npm >/dev/null 2>&1; then
  missing+=(npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
