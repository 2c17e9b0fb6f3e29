"""PostgreSQL as the suites use it: a database of a suite's own, created in the cluster an admin URL
names (the one scripts/test.sh and scripts/local-servers.sh start) and dropped at the end, as the
C++ suites' TestDatabase does; queried with psql, so checks read what is committed. And a server of
its own: initdb and pg_ctl start as scripts/local-servers.sh runs them (`python3 -m rrsuite server
postgres-init|postgres-start`), as the postgres user when we are root (PostgreSQL refuses root)."""

import glob
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import urllib.parse

from .process import HarnessError, print_tail, run


def pg_bin():
    """The newest installed PostgreSQL's bin directory (/usr/lib/postgresql/N/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                   key=lambda p: [int(x) for x in re.findall(r"\d+", p)])
    if not found:
        raise HarnessError("PostgreSQL server binaries not found (install postgresql-15)")
    return found[-1]


def as_postgres(argv):
    return (["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []) + list(argv)


def initdb(data, logfile):
    """A new cluster in `data` (trust on loopback, UTF8, not synced: a throwaway one); as root the
    directory is made the postgres user's and its parent reachable. initdb's output in logfile."""
    os.makedirs(data, exist_ok=True)
    if os.getuid() == 0:
        parent = os.path.dirname(os.path.abspath(data))
        os.chmod(parent, os.stat(parent).st_mode | 0o001)
        user = pwd.getpwnam("postgres")
        os.chown(data, user.pw_uid, user.pw_gid)
        os.chmod(data, 0o700)
    with open(logfile, "wb") as log:
        argv = [os.path.join(pg_bin(), "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync",
                "-E", "UTF8"]
        code = subprocess.run(as_postgres(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                              timeout=300).returncode
    if code != 0:
        print_tail(logfile, 1000)
        raise HarnessError("initdb failed (exit %d; log: %s)" % (code, logfile))


def pg_ctl_start(data, logfile, seconds, options):
    """pg_ctl start of the cluster in `data` with server `options` (a string pg_ctl hands to a
    shell: quoted values may hold spaces), waiting up to `seconds` for connections."""
    code = subprocess.run(as_postgres([os.path.join(pg_bin(), "pg_ctl"), "-w", "-t", str(seconds), "-D", data, "-l",
                                       logfile, "-o", options, "start"]), stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, timeout=seconds + 60).returncode
    if code != 0:
        print_tail(logfile, 30)
        raise HarnessError("pg_ctl start failed (exit %d; log: %s)" % (code, logfile))


def pg_ctl_stop(data, seconds, mode, bin_dir=None, quiet=False):
    """pg_ctl stop -m `mode` of the cluster in `data`, waiting up to `seconds`; whether it stopped.
    bin_dir: the PostgreSQL the cluster was started with, when that need not be the newest; quiet:
    pg_ctl's complaints not on our stderr (a caller that tries a harder mode next)."""
    pg_ctl = os.path.join(bin_dir or pg_bin(), "pg_ctl")
    return subprocess.run(as_postgres([pg_ctl, "-w", "-t", str(seconds), "-D", data, "-m", mode, "stop"]),
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL if quiet else None).returncode == 0


def postmaster_running(data):
    """The pid of a server still running on `data` (its postmaster.pid), else None."""
    try:
        with open(os.path.join(data, "postmaster.pid")) as f:
            pid = int(f.readline())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def with_database(url, database):
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + database))


def psql(url, sql, timeout=60):
    """psql -c SQL on `url`, ON_ERROR_STOP; its unaligned, tuples-only output."""
    result = run(["psql", url, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql], timeout=timeout,
                 check=False)
    if result.returncode != 0:
        raise HarnessError("psql failed: %s\n%s" % (sql, result.stderr.decode(errors="replace")))
    return result.stdout.decode()


class FreshDatabase:
    def __init__(self, admin_url, prefix="rr_suite_"):
        if not admin_url:
            raise HarnessError("DATABASE_URL is not set: run the tests through scripts/test.sh (or export what "
                               "scripts/local-servers.sh start prints)")
        if shutil.which("psql") is None:
            raise HarnessError("psql is not installed (scripts/install-deps.sh installs postgresql-15)")
        self.admin_url = admin_url
        self.name = prefix + secrets.token_hex(6)
        psql(self.admin_url, "CREATE DATABASE " + self.name)
        self.url = with_database(admin_url, self.name)

    def drop(self):
        try:
            psql(self.admin_url, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.name)
        except HarnessError:
            pass  # a leftover database in a throwaway cluster harms nothing

    def rows(self, sql):
        """The rows of a query, as dicts (through json_agg, so types survive psql's text)."""
        return json.loads(psql(self.url, "SELECT coalesce(json_agg(q), '[]') FROM (%s) q" % sql).strip())

    def execute(self, sql):
        psql(self.url, sql)
