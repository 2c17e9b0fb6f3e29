"""bench/soak.sh, bench/cluster_soak.sh and bench/ha_soak.sh: the fault-injection suite's long
profiles (tests/fault/fault_suite.py), a soak under faults (default 20 minutes, 32 clients),
printing the same summary line as the short profile. SOAK_PROFILE picks the profile (long;
cluster_soak.sh sets cluster-long, ha_soak.sh ha-long). Extra arguments go to the suite, e.g.

  bench/soak.sh --seed 1234 --duration 600 --fault-rate 10 --bin-dir build-fault/bin

The binaries: build-fault/bin if it holds the API, else build/bin (a --bin-dir given wins: the
suite reads its last one). Build first: scripts/build.sh build-fault -DCMAKE_BUILD_TYPE=RelWithDebInfo"""

import os
import sys

from rrsuite.paths import REPO


def main(argv):
    os.chdir(REPO)
    bin_dir = "build-fault/bin"
    if not os.access(os.path.join(bin_dir, "rocket-rides-api"), os.X_OK):
        bin_dir = "build/bin"
    # The suite replaces this process (exec): its signals and exit status are the command's, with
    # no driver between them, as when soak.sh exec'd it.
    argv = [sys.executable, "tests/fault/fault_suite.py", "--profile", os.environ.get("SOAK_PROFILE") or "long",
            "--duration", "1200", "--clients", "32", "--bin-dir", bin_dir] + list(argv)
    sys.stdout.flush()
    os.execv(sys.executable, argv)
