#!/usr/bin/env bash
# The Debian packages, built, checked and installed the way an operator would:
#   1. dpkg-buildpackage -us -uc -b on a copy of the source (an optimised build of its own, only what
#      the packages ship, without -dbgsym packages) makes rocket-rides_<version>_amd64.deb and
#      rocket-rides-tools;
#   2. lintian reports no error and no warning that debian/*.lintian-overrides does not explain;
#   3. in a throw-away Debian 12 root (debootstrap --variant=minbase, from Debian's archive, cached
#      in CACHE_DIR with the packages' dependencies installed), apt installs both packages:
#      the files (dpkg -L), the conffile's mode and owner, the user, the units enabled under
#      rocket-rides.target and `systemd-analyze verify` on them as installed;
#   4. with the installed env file filled in (the test PostgreSQL on loopback, the stand-in
#      provider from the build tree outside the root), the installed `rocket-rides-api migrate`,
#      `user create` and the API itself, started by hand (no systemd in a chroot), answer one
#      POST /rides with 201;
#   5. an upgrade to a newer version (the package repacked with a bumped version) keeps the edited
#      conffile and its mode;
#   6. purge leaves the root's file list exactly as before the install.
#
#   tests/package_test.sh BIN_DIR WORK_DIR
# BIN_DIR holds rocket-rides-stripe-mock; WORK_DIR (beside the test build) keeps the source copy,
# the packages and the logs between runs. CACHE_DIR is ROCKET_RIDES_PACKAGE_CACHE, by default
# ~/.cache/rocket-rides/package-test (XDG_CACHE_HOME's): the roots outlive the build tree, since a
# fresh clone's first run fetched the root again, about 40 s of the test; a root
# older than 14 days is fetched afresh. Needs root, DATABASE_URL of a running
# PostgreSQL on 127.0.0.1 (scripts/local-servers.sh), debhelper, lintian and debootstrap.
set -euo pipefail

bin_dir=$(cd "$1" && pwd)
work=$2
source_dir=$(cd "$(dirname "$0")/.." && pwd)
: "${DATABASE_URL:?DATABASE_URL of the test PostgreSQL is needed (scripts/local-servers.sh start)}"
# Without HOME (nor XDG_CACHE_HOME), the cache stays under WORK_DIR, as before.
user_cache=${XDG_CACHE_HOME:-${HOME:+$HOME/.cache}}
cache=${ROCKET_RIDES_PACKAGE_CACHE:-${user_cache:+$user_cache/rocket-rides/package-test}}
cache=${cache:-$work/cache}
mkdir -p "$work" "$cache"
work=$(cd "$work" && pwd)
# Debian's archive moves on (point releases, security updates): an old root is dropped.
find "$cache" -maxdepth 1 -name 'bookworm-*.tar' -mtime +14 -delete
root=$work/root
mirror=${PACKAGE_TEST_MIRROR:-http://deb.debian.org/debian}

started_pids=()
mounted=()
cleanup() {
  local status=$?
  # debootstrap, when the run stops while it fetches the bare root: its whole session (setsid).
  if [[ -n ${bootstrap_pid:-} ]]; then
    kill -TERM -- "-$bootstrap_pid" 2>/dev/null || true
    wait "$bootstrap_pid" 2>/dev/null || true
  fi
  for pid in "${started_pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${started_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" || umount -l "${mounted[i]}" || true
  done
  if [[ -n ${test_database:-} ]]; then
    psql -X -q "$DATABASE_URL" -c "DROP DATABASE IF EXISTS $test_database" >/dev/null 2>&1 || true
  fi
  # The root is kept after a failure, for a look; the next run starts from the cache again.
  if ((status == 0)); then rm -rf "$root"; fi
  exit $status
}
trap cleanup EXIT

step() { printf '== %s (%ds)\n' "$*" "$SECONDS"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
# As the daemons' user with the installed env file, as the units run them (EnvironmentFile=).
# "${as_daemon[@]}" COMMAND...: one process (chroot, then env, sh and the command each exec the
# next), so that the pid of `"${as_daemon[@]}" ... &` is the daemon's. Numeric ids: the names exist
# only inside the root. Set once the package has created the user.
as_daemon=()
set_as_daemon() {
  as_daemon=(chroot --userspec="$(in_root id -u rocket-rides):$(in_root id -g rocket-rides)" "$root"
    /usr/bin/env -i PATH=/usr/bin:/bin /bin/sh -c 'set -a; . /etc/rocket-rides/rocket-rides.env; set +a; exec "$@"' sh)
}
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The bare Debian 12 root does not depend on the packages: on a first run it is fetched from the
# archive while they build (mostly waiting on the network and the disk, about a minute), and
# cached as a tarball for the next runs.
base_tar=$cache/bookworm-minbase.tar
bootstrap_pid=
if [[ ! -f $base_tar ]]; then
  rm -rf "$work/bootstrap"
  setsid debootstrap --variant=minbase bookworm "$work/bootstrap" "$mirror" >"$work/debootstrap.log" 2>&1 &
  bootstrap_pid=$!
fi

# 1. The packages. The copy holds what git tracks plus new files not ignored (the worktree as it
# is, build trees left out); its path stays the same between runs so ccache finds the objects.
step "building the packages"
version=$(dpkg-parsechangelog -l "$source_dir/debian/changelog" -S Version)
# PACKAGE_TEST_PREBUILT=DIR skips the build and takes DIR's packages (to work on the later steps).
packages=${PACKAGE_TEST_PREBUILT:-$work}
if [[ -z ${PACKAGE_TEST_PREBUILT:-} ]]; then
  rm -rf "$work/src" "$work"/*.deb "$work"/*.ddeb "$work"/*.changes "$work"/*.buildinfo
  mkdir -p "$work/src"
  git -C "$source_dir" ls-files -z -c -o --exclude-standard |
    (cd "$source_dir" && xargs -0 cp --parents -t "$work/src" 2>/dev/null || true)
  [[ -f $work/src/debian/rules ]] || fail "the source copy has no debian/rules"
  # Without the -dbgsym packages: they hold only the debug information dh_strip takes out of these
  # very binaries, and compressing it (with dwz before, debian/rules) is a minute of the build. And
  # so without -g (dpkg-buildflags' DEB_CXXFLAGS_STRIP, which debian/rules leaves the flags to):
  # debug information nothing keeps is a third of the compiler's time.
  # debhelper gives the build a home of its own (debian/.debhelper/generated/_source/home), where
  # ccache would find an empty cache every time: the cache the test build uses is named outright,
  # so an unchanged source compiles from it (the build's path stays the same, above).
  if [[ -z ${CCACHE_DIR:-} ]] && command -v ccache >/dev/null; then
    CCACHE_DIR=$(ccache --get-config cache_dir)
    export CCACHE_DIR
  fi
  if ! (cd "$work/src" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }noautodbgsym" \
    DEB_CXXFLAGS_STRIP="${DEB_CXXFLAGS_STRIP:+$DEB_CXXFLAGS_STRIP }-g" \
    dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
    tail -40 "$work/build.log"
    fail "dpkg-buildpackage failed (whole log: $work/build.log)"
  fi
  # The compiler's flags are dpkg-buildflags' alone: each compile line has its -O2 and
  # _FORTIFY_SOURCE, one -O, and no -g, which this build strips; a CMake build type adding its own
  # (-O2 -g, -O3) would also defeat DEB_BUILD_OPTIONS=noopt.
  compiles=$(grep -E '(c\+\+|g\+\+) .* -c ' "$work/build.log" || true)
  [[ -n $compiles ]] || fail "no compile line in $work/build.log"
  stray=$(grep -vE -- '-O2 .*-D_FORTIFY_SOURCE=2' <<<"$compiles" || true)
  stray+=$(grep -E -- ' -g | -O[013s] | -O2 .* -O2 ' <<<"$compiles" || true)
  [[ -z $stray ]] || fail "compiled with flags other than dpkg-buildflags': $(head -c 400 <<<"$stray")"
fi
deb=$packages/rocket-rides_${version}_amd64.deb
tools_deb=$packages/rocket-rides-tools_${version}_amd64.deb
[[ -f $deb && -f $tools_deb ]] || fail "expected $(basename "$deb") and $(basename "$tools_deb"); got: $(ls "$work")"

# 2. lintian: no error, no warning left unexplained. It reads only the packages, so it runs while
# the root is prepared, and is judged before anything is installed.
step "lintian, beside the root's preparation"
changes=$packages/rocket-rides_${version}_amd64.changes
[[ -f $changes ]] || changes=""
lintian --fail-on error,warning --info ${changes:-"$deb" "$tools_deb"} >"$work/lintian.log" 2>&1 &
lintian_pid=$!
started_pids+=($lintian_pid)

# 3. A throw-away Debian 12 root with the packages' dependencies, each cached as a tarball: the
# bare root by suite, the one with dependencies by the hash of the Depends fields.
step "preparing the root"
depends=$( (dpkg-deb -f "$deb" Depends; dpkg-deb -f "$tools_deb" Depends) | paste -sd, -)
deps_tar=$cache/bookworm-deps-$(printf %s "$depends" | sha256sum | cut -c1-16).tar
extract_root() {
  rm -rf "$root"
  mkdir -p "$root"
  tar -C "$root" -xf "$1"
}
if [[ ! -f $deps_tar ]]; then
  if [[ ! -f $base_tar ]]; then
    pid=$bootstrap_pid
    bootstrap_pid=
    wait "$pid" || fail "debootstrap failed ($work/debootstrap.log)"
    tar -C "$work/bootstrap" -cf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
    rm -rf "$work/bootstrap"
  fi
  extract_root "$base_tar"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  in_root apt-get update -qq >"$work/deps.log" 2>&1 || fail "apt-get update in the root failed ($work/deps.log)"
  # systemd too, whose systemd-analyze checks the units as installed (it is not PID 1 in a chroot).
  in_root apt-get satisfy -y -qq --no-install-recommends "$depends, systemd" \
    >>"$work/deps.log" 2>&1 ||
    fail "installing the dependencies in the root failed ($work/deps.log)"
  in_root apt-get clean
  tar -C "$root" -cf "$deps_tar.tmp" . && mv "$deps_tar.tmp" "$deps_tar"
fi
extract_root "$deps_tar"

if ! wait "$lintian_pid"; then
  cat "$work/lintian.log"
  fail "lintian reports errors or warnings without an override"
fi
cat "$work/lintian.log"

# What purge must give back: every path in the root but the ones dpkg, apt and the logs own, and
# the account databases' backups (shadow's "-" files, rewritten whenever a user is added; the
# user itself stays on purge, as Debian does, since files elsewhere may carry its id).
snapshot() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run -o -path ./tmp \
    -o -path ./var/cache -o -path ./var/lib/apt -o -path ./var/lib/dpkg -o -path ./var/log \) -prune \
    -o \( -path ./etc/passwd- -o -path ./etc/group- -o -path ./etc/shadow- -o -path ./etc/gshadow- \) -prune \
    -o -print | sort)
}
snapshot >"$work/before.list"

step "installing"
cp "$deb" "$tools_deb" "$root/tmp/"
in_root apt-get install -y -qq --no-install-recommends \
  "/tmp/$(basename "$deb")" "/tmp/$(basename "$tools_deb")" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  fail "apt-get install of the packages failed"
}
listed=$(in_root dpkg -L rocket-rides)
for path in /usr/bin/rocket-rides-api /usr/bin/rocket-rides-enqueuer /usr/bin/rocket-rides-completer \
  /usr/bin/rocket-rides-reaper /lib/systemd/system/rocket-rides.target /lib/systemd/system/rocket-rides-api.service \
  /lib/systemd/system/rocket-rides-reaper.service /lib/systemd/system/rocket-rides-backup.timer \
  /etc/rocket-rides/rocket-rides.env /usr/share/man/man1/rocket-rides-api.1.gz \
  /usr/share/doc/rocket-rides/examples/haproxy.cfg /usr/share/doc/rocket-rides/examples/pgbouncer.ini \
  /usr/share/doc/rocket-rides/examples/patroni.yml.in /usr/share/doc/rocket-rides/examples/prometheus-alerts.yml; do
  grep -qx "$path" <<<"$listed" || fail "dpkg -L rocket-rides lacks $path"
done
grep -q 'stripe-mock\|simulator' <<<"$listed" && fail "rocket-rides ships the stand-in provider or the simulator"
# Whole outputs in variables, never `producer | grep -q` (grep's early exit fails the producer).
tools_listed=$(in_root dpkg -L rocket-rides-tools)
grep -qx /usr/bin/rocket-rides-stripe-mock <<<"$tools_listed" || fail "rocket-rides-tools lacks the stand-in"
grep -qx /etc/rocket-rides/rocket-rides.env <<<"$(in_root cat /var/lib/dpkg/info/rocket-rides.conffiles)" ||
  fail "/etc/rocket-rides/rocket-rides.env is not a conffile"
mode=$(in_root stat -c '%a %U:%G' /etc/rocket-rides/rocket-rides.env)
[[ $mode == "640 root:rocket-rides" ]] || fail "the conffile is $mode, not 640 root:rocket-rides"
in_root getent passwd rocket-rides >/dev/null || fail "no user rocket-rides"
set_as_daemon
[[ -L $root/etc/systemd/system/multi-user.target.wants/rocket-rides.target &&
  -L $root/etc/systemd/system/rocket-rides.target.wants/rocket-rides-api.service ]] ||
  fail "rocket-rides.target is not enabled, or the API not wanted by it"
[[ ! -e $root/etc/systemd/system/timers.target.wants/rocket-rides-backup.timer ]] ||
  fail "the backup timer is enabled by the install (it needs pgBackRest set up first)"
for page in rocket-rides-api rocket-rides-reaper; do
  help=$(in_root "/usr/bin/$page" --help)
  manual=$(zcat "$root/usr/share/man/man1/$page.1.gz")
  for option in --help --version; do
    grep -q -- "$option" <<<"$help" || fail "$page --help does not name $option"
    grep -qF -- "${option//-/\\-}" <<<"$manual" || fail "the manual page of $page lacks $option, which --help shows"
  done
done

step "systemd-analyze verify and security on the installed units"
for unit in rocket-rides.target rocket-rides-api.service rocket-rides-enqueuer.service rocket-rides-completer.service \
  rocket-rides-reaper.service rocket-rides-backup.service rocket-rides-backup.timer \
  rocket-rides-backup-metrics.service rocket-rides-backup-metrics.timer; do
  out=$(in_root systemd-analyze verify "/lib/systemd/system/$unit" 2>&1) || true
  # pgBackRest belongs to the database's host and is not installed here: the backup unit may name
  # its missing command, nothing else.
  out=$(grep -v 'Command /usr/bin/pgbackrest is not executable' <<<"$out" || true)
  [[ -z $out ]] || fail "systemd-analyze verify $unit: $out"
  if [[ $unit == *.service ]]; then
    in_root systemd-analyze security --offline=true "/lib/systemd/system/$unit" 2>&1 | grep 'Overall exposure' || true
  fi
done

# 4. The installed binaries against the test PostgreSQL, configured through the installed file.
step "migrate, user create, the API and one POST /rides"
test_database=rr_package_$$
psql -X -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "CREATE DATABASE $test_database" >/dev/null
database_url=${DATABASE_URL%/*}/$test_database
mock_port=$(free_port)
api_port=$(free_port)
PORT=$mock_port BIND_ADDRESS=127.0.0.1 STRIPE_API_KEY=sk_test_package "$bin_dir/rocket-rides-stripe-mock" \
  >"$work/stripe-mock.log" 2>&1 &
started_pids+=($!)
env_file=$root/etc/rocket-rides/rocket-rides.env
edited=$(sed -e "s|^DATABASE_URL=\$|DATABASE_URL=$database_url|" -e "s|^STRIPE_API_KEY=\$|STRIPE_API_KEY=sk_test_package|" \
  -e "s|^#STRIPE_API_BASE=.*|STRIPE_API_BASE=http://127.0.0.1:$mock_port|" -e "s|^#PORT=.*|PORT=$api_port|" "$env_file")
printf '%s\n' "$edited" >"$env_file" # in place: the file keeps its mode and owner
"${as_daemon[@]}" /usr/bin/rocket-rides-api migrate >"$work/migrate.log" 2>&1 || {
  cat "$work/migrate.log"
  fail "the installed rocket-rides-api migrate failed"
}
token=$("${as_daemon[@]}" /usr/bin/rocket-rides-api user create --email package@example.com --stripe-customer cus_package 2>>"$work/migrate.log") ||
  fail "user create failed: $(cat "$work/migrate.log")"
"${as_daemon[@]}" /usr/bin/rocket-rides-api >"$work/api.log" 2>&1 &
api_pid=$!
started_pids+=($api_pid)
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$api_port/readyz" >/dev/null 2>&1 && break
  kill -0 "$api_pid" 2>/dev/null || fail "the installed API exited: $(tail -5 "$work/api.log")"
  sleep 0.1
done
status=$(curl -s -o "$work/ride.json" -w '%{http_code}' -X POST "http://127.0.0.1:$api_port/rides" \
  -H "Authorization: Bearer $token" -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" \
  -d origin_lat=37.7749 -d origin_lon=-122.4194 -d target_lat=37.8044 -d target_lon=-122.2712)
[[ $status == 201 ]] || fail "POST /rides answered $status: $(cat "$work/ride.json"); API log: $(tail -5 "$work/api.log")"
kill -TERM "$api_pid"
wait "$api_pid" || fail "the API did not stop cleanly on SIGTERM: $(tail -5 "$work/api.log")"

# 5. An upgrade keeps the edited conffile, its mode and its owner.
step "upgrading"
newer=$version.1
rm -rf "$work/repack"
dpkg-deb -R "$deb" "$work/repack"
sed -i "s/^Version: .*/Version: $newer/" "$work/repack/DEBIAN/control"
dpkg-deb -Zgzip -z1 -b "$work/repack" "$root/tmp/rocket-rides_${newer}_amd64.deb" >/dev/null
rm -rf "$work/repack"
in_root apt-get install -y -qq "/tmp/rocket-rides_${newer}_amd64.deb" >"$work/upgrade.log" 2>&1 || {
  cat "$work/upgrade.log"
  fail "the upgrade failed"
}
[[ $(in_root dpkg-query -W -f '${Version}' rocket-rides) == "$newer" ]] || fail "the upgrade did not install $newer"
grep -qx "DATABASE_URL=$database_url" "$env_file" || fail "the upgrade lost the edited DATABASE_URL"
mode=$(in_root stat -c '%a %U:%G' /etc/rocket-rides/rocket-rides.env)
[[ $mode == "640 root:rocket-rides" ]] || fail "after the upgrade the conffile is $mode"
leftover=$(ls "$root/etc/rocket-rides")
[[ $leftover == rocket-rides.env ]] || fail "after the upgrade /etc/rocket-rides holds: $leftover"

# 6. Purge, then nothing of the packages is left.
step "purging"
in_root apt-get purge -y -qq rocket-rides rocket-rides-tools >"$work/purge.log" 2>&1 || {
  cat "$work/purge.log"
  fail "purge failed"
}
snapshot >"$work/after.list"
if ! diff -u "$work/before.list" "$work/after.list" >"$work/leftovers.diff"; then
  cat "$work/leftovers.diff"
  fail "purge left the root different from before the install (above: - gone, + left over)"
fi
step "ok: rocket-rides $version built, lintian-clean, installed, served a ride, upgraded to $newer and purged without a trace"
