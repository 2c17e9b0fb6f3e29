#!/usr/bin/env python3
"""scripts/cluster.sh's command line, as an operator and the suites see it, pinned to a transcript:
the usage text, the refusals and their exit codes, and on a plain cluster started for the test the
export lines of `start` and `env`, the `status` lines, the messages of start-member, stop-member,
restart and rolling-restart, and `stop` twice. The transcript (tests/scripts/cluster_cli.golden)
is what the script printed before its processes moved to tools/rrsuite: the move must not change
a line of it. What differs from run to run is replaced before the comparison: the cluster's
directory, the repository's path, each port by the name cluster.conf gives it, pids, the demo
token, times and WAL names.

  tests/scripts/cluster_cli_test.py BIN_DIR [--update]

--update writes the transcript of this run as the new expected text (review the diff). Needs
haproxy, pgbouncer and pgbackrest; about a minute with the sanitized build."""

import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CLUSTER = os.path.join(REPO, "scripts", "cluster.sh")
GOLDEN = os.path.join(REPO, "tests", "scripts", "cluster_cli.golden")


def steps(bin_dir):
    """(arguments, what the step is for): D is the cluster's directory, M a missing one."""
    return [
        ([], "no command: the usage text, exit 2"),
        (["frob", "D"], "an unknown command: the usage text, exit 2"),
        (["status", "M"], "no such directory"),
        (["stop", "M"], "stop of nothing is no error"),
        (["env", "D"], "a directory without a cluster"),
        (["start", "D", "--async"], "--async without --ha"),
        (["start", "D", "--netns", "p"], "--netns without --ha"),
        (["start", "D", "--bogus"], "an unknown option"),
        (["start", "D", "--bin-dir", "/nonexistent-bin"], "no binaries"),
        (["start", "D", "--bin-dir", bin_dir], "the plain shape"),
        (["env", "D"], "the export lines again"),
        (["status", "D"], "every member running"),
        (["start-member", "D", "api1"], "a member already running"),
        (["start-member", "D", "nosuch"], "an unknown member"),
        (["stop-member", "D", "nosuch"], "an unknown member"),
        (["leader", "D"], "an HA command on the plain shape"),
        (["stop-member", "D", "api1"], "an API out of rotation"),
        (["status", "D"], "api1 stopped, HAProxy has it DOWN"),
        (["start-member", "D", "api1"], "api1 back"),
        (["stop-member", "D", "stripe-mock", "--kill"], "kill -9"),
        (["status", "D"], "stripe-mock stopped"),
        (["start-member", "D", "stripe-mock"], "the provider back"),
        (["restart", "D", "enqueuer1"], "stop-member then start-member"),
        (["restart", "D", "pgbouncer"], "PgBouncer's INT, then its start"),
        (["restart", "D", "haproxy"], "HAProxy's USR1, then its start"),
        (["rolling-restart", "D"], "api1 then api2"),
        (["status", "D"], "everything running again"),
        (["start", "D", "--bin-dir", bin_dir], "start of a running cluster: its export lines"),
        (["stop", "D"], "everything stopped"),
        (["stop", "D"], "twice"),
        (["status", "D"], "a stopped cluster"),
        (["start", "H", "--ha", "--netns", "rrcli", "--bin-dir", bin_dir],
         "--netns refused in a namespace that may be the machine's"),
    ]


def run_step(args, dirs, env):
    argv = [CLUSTER] + [dirs.get(a, a) for a in args]
    result = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, timeout=600)
    return result.returncode, result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")


def read_assignments(path):
    values = {}
    try:
        with open(path) as f:
            for line in f:
                name, sep, value = line.strip().partition("=")
                if sep:
                    values[name] = value.strip("'\"")
    except OSError:
        pass
    return values


class Normaliser:
    """Replaces what changes from run to run; the ports are learnt from the cluster's files."""

    def __init__(self, dirs):
        self.dirs = dirs
        self.ports = {}

    def learn_ports(self):
        for path in (os.path.join(self.dirs["D"], "servers", "ports"), os.path.join(self.dirs["D"], "cluster.conf")):
            for name, value in read_assignments(path).items():
                if name.endswith("PORT") and value.isdigit():
                    self.ports[value] = name

    def __call__(self, text):
        for key in ("H", "D", "M"):
            text = text.replace(self.dirs[key], "<%s>" % key)
        text = text.replace(REPO, "<REPO>")
        # Pids first: a pid can be the same number as one of the ports (api2's was the provider's once).
        text = re.sub(r"\bpid[= ]\d+", lambda m: m.group(0)[:4] + "<PID>", text)
        text = re.sub(r"\b\d{4,5}\b", lambda m: "<%s>" % self.ports[m.group(0)] if m.group(0) in self.ports
                      else m.group(0), text)
        text = re.sub(r"\brr_[0-9a-f]{64}\b", "<TOKEN>", text)
        text = re.sub(r"archived=\d+ last=(none|[0-9A-F]{24}) at \S+", "archived=<N> last=<WAL> at <WHEN>", text)
        # Which interfaces make this namespace look like the machine's, or that PID 1's is readable.
        text = re.sub(r"cluster: --netns refuses to run (here|in the machine's initial network namespace).*",
                      "cluster: --netns refuses to run in what may be the machine's namespace", text)
        return text


def transcript(bin_dir):
    dirs = {"D": tempfile.mkdtemp(prefix="rr-cluster-cli."), "H": tempfile.mkdtemp(prefix="rr-cluster-cli-ha.")}
    dirs["M"] = dirs["D"] + "-missing"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DATABASE_", "REDIS_", "STRIPE_", "API_", "SHUTDOWN_", "MOCK_", "ROCKET_RIDES_"))}
    normalise = Normaliser(dirs)
    out = []
    try:
        for args, why in steps(bin_dir):
            rc, stdout, stderr = run_step(args, dirs, env)
            normalise.learn_ports()
            out.append("$ cluster.sh %s    # %s" % (" ".join(args).replace(bin_dir, "BIN"), why))
            out.append("exit %d" % rc)
            for name, text in (("stdout", stdout), ("stderr", stderr)):
                if text:
                    out.append("%s:" % name)
                    out += [("  " + line).rstrip() for line in normalise(text).rstrip("\n").split("\n")]
            out.append("")
    finally:
        for key in ("D", "H"):
            subprocess.run([CLUSTER, "stop", dirs[key]], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=600)
            shutil.rmtree(dirs[key], ignore_errors=True)
    return "\n".join(out)


def main(argv):
    if len(argv) < 1 or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir, update = argv[0], "--update" in argv[1:]
    missing = [tool for tool in ("haproxy", "pgbouncer", "pgbackrest") if shutil.which(tool) is None]
    if missing:
        print("cluster_cli: %s not installed (scripts/install-deps.sh)" % ", ".join(missing), file=sys.stderr)
        return 1
    got = transcript(bin_dir)
    if update:
        with open(GOLDEN, "w") as f:
            f.write(got)
        print("wrote %s" % GOLDEN)
        return 0
    with open(GOLDEN) as f:
        want = f.read()
    if got == want:
        print("cluster.sh's transcript matches %s (%d lines)" % (os.path.relpath(GOLDEN, REPO), got.count("\n") + 1))
        return 0
    print("\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), "expected", "this run", lineterm="")))
    print("\nFAIL: scripts/cluster.sh's output differs from %s (above: - expected, + this run)" % GOLDEN)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
