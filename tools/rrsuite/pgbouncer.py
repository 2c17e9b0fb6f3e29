"""PgBouncer running the pooling policy deploy/pgbouncer.ini unchanged, in front of one loopback
PostgreSQL: the site file that includes the policy (what is this site's: the database's port, the
listening port, the socket directory, trust auth on loopback), its command line (as the postgres
user when we are root: PgBouncer refuses root), its readiness (a query passes through it) and the
check that the policy in force is the deploy file's (an inclusion gone wrong, such as a second
[pgbouncer] header, fails silently). scripts/cluster.sh and the API bench both start it here."""

import os
import pwd
import re
import subprocess
import time

from .paths import REPO

POLICY = os.path.join(REPO, "deploy", "pgbouncer.ini")
BINARY = "/usr/sbin/pgbouncer"


def write_site(directory, pg_port, listen_port, writer, overrides="", overrides_name=""):
    """DIR/pgbouncer.ini and DIR/userlist.txt for database rocket_rides on 127.0.0.1:pg_port.
    `overrides` ("key = value" lines) are appended after the policy: experiments only. As root the
    directory becomes the postgres user's. Returns None, or why it could not."""
    os.makedirs(directory, exist_ok=True)
    lines = [
        "; Written by %s only. The pooling policy is the deploy" % writer,
        "; file, included right under the one [pgbouncer] header (a second header would reset it).",
        "[databases]",
        "rocket_rides = host=127.0.0.1 port=%s dbname=rocket_rides" % pg_port,
        "[pgbouncer]",
        "%%include %s" % POLICY,
        "listen_addr = 127.0.0.1",
        "listen_port = %s" % listen_port,
        "unix_socket_dir = %s" % directory,
        "; Loopback only: production uses scram-sha-256 (see the deploy file's header).",
        "auth_type = trust",
        "auth_file = %s/userlist.txt" % directory,
        "admin_users = postgres",
        "; Logs go to stderr, which the script that starts PgBouncer sends to a log file.",
        "logfile =",
        "pidfile =",
    ]
    if overrides:
        lines += ["; %s (an experiment, not the deployed policy):" % overrides_name, overrides]
    with open(os.path.join(directory, "pgbouncer.ini"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(directory, "userlist.txt"), "w") as f:
        f.write('"postgres" ""\n')
    if os.getuid() == 0:
        user = pwd.getpwnam("postgres")
        for root, _dirs, files in os.walk(directory):
            os.chown(root, user.pw_uid, user.pw_gid)
            for name in files:
                os.chown(os.path.join(root, name), user.pw_uid, user.pw_gid)
        if subprocess.run(["runuser", "-u", "postgres", "--", "test", "-r", POLICY]).returncode != 0:
            return "the postgres user cannot read %s (PgBouncer runs as postgres)" % POLICY
    return None


def argv(directory):
    return [BINARY, os.path.join(directory, "pgbouncer.ini")]


USER = "postgres"
HOME = "/var/lib/postgresql"


def passes_queries(port, timeout=30.0):
    """Whether a query reaches PostgreSQL through PgBouncer on `port` within `timeout` seconds."""
    try:
        return subprocess.run(["psql", "-X", "-q", "-At", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d",
                               "rocket_rides", "-c", "SELECT 1"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=timeout).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def wait_ready(process, port, seconds=10):
    """Until a query passes through the PgBouncer `process` on `port`. A deadline, not a count of
    tries: a query PgBouncer cannot pass waits in it for a server, so each try gets what is left.
    Raises HarnessError naming its log if it exits first or the deadline passes."""
    deadline = time.monotonic() + seconds
    return process.wait_ready(lambda: passes_queries(port, timeout=max(1.0, deadline - time.monotonic())),
                              "pass a query to PostgreSQL", seconds, interval=0.1)


def show_config(port):
    """{key: value} of SHOW CONFIG on the admin console, or None if it does not answer."""
    result = subprocess.run(["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d",
                             "pgbouncer", "-c", "SHOW CONFIG"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, timeout=30)
    if result.returncode != 0:
        return None
    shown = {}
    for line in result.stdout.decode(errors="replace").splitlines():
        fields = line.split("|")
        if len(fields) >= 2:
            shown[fields[0]] = fields[1]
    return shown


def policy_problems(port, overrides=""):
    """The keys deploy/pgbouncer.ini sets that are not in force (unless `overrides` sets them),
    one line each; ["cannot read SHOW CONFIG from PgBouncer"] if it does not answer."""
    shown = show_config(port)
    if shown is None:
        return ["cannot read SHOW CONFIG from PgBouncer"]
    overridden = {line.split("=", 1)[0].strip() for line in overrides.splitlines() if "=" in line}
    problems = []
    with open(POLICY) as f:
        for line in f:
            match = re.match(r"^([a-z_]+)\s*=(.*)$", line.rstrip("\n"))
            if not match:
                continue
            key, value = match.group(1), match.group(2).strip()
            if key in overridden:
                continue
            actual = shown.get(key, "")
            if actual != value:
                problems.append("PgBouncer runs %s = '%s', deploy/pgbouncer.ini says '%s'" % (key, actual, value))
    return problems
