"""A PostgreSQL database of the suite's own, created in the cluster DATABASE_URL names (the one
scripts/test.sh and scripts/local-servers.sh start) and dropped at the end, as the C++ suites'
TestDatabase does; queried with psql, so the checks read what is committed, not what the API says."""

import json
import os
import secrets
import shutil
import subprocess
import urllib.parse

from processes import HarnessError


def with_database(url, database):
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + database))


class FreshDatabase:
    def __init__(self):
        admin_url = os.environ.get("DATABASE_URL", "")
        if not admin_url:
            raise HarnessError("DATABASE_URL is not set: run the tests through scripts/test.sh (or export what "
                               "scripts/local-servers.sh start prints)")
        if shutil.which("psql") is None:
            raise HarnessError("psql is not installed (scripts/install-deps.sh installs postgresql-15)")
        self.admin_url = admin_url
        self.name = "rr_browser_" + secrets.token_hex(6)
        self._psql(self.admin_url, "CREATE DATABASE " + self.name)
        self.url = with_database(admin_url, self.name)

    def drop(self):
        try:
            self._psql(self.admin_url, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.name)
        except HarnessError:
            pass  # a leftover database in a throwaway cluster harms nothing

    @staticmethod
    def _psql(url, sql):
        result = subprocess.run(["psql", url, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        if result.returncode != 0:
            raise HarnessError("psql failed: %s\n%s" % (sql, result.stderr.decode(errors="replace")))
        return result.stdout.decode()

    def rows(self, sql):
        """The rows of a query, as dicts (through json_agg, so types survive psql's text)."""
        out = self._psql(self.url, "SELECT coalesce(json_agg(q), '[]') FROM (%s) q" % sql).strip()
        return json.loads(out)

    def execute(self, sql):
        self._psql(self.url, sql)
