"""PostgreSQL as the suites use it: a database of a suite's own, created in the cluster an admin URL
names (the one scripts/test.sh and scripts/local-servers.sh start) and dropped at the end, as the
C++ suites' TestDatabase does; queried with psql, so checks read what is committed. (Servers of
their own are started by scripts/local-servers.sh: local_servers.py.)"""

import json
import secrets
import shutil
import urllib.parse

from .process import HarnessError, run


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
