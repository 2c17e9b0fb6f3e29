"""The directory of scripts/local-servers.sh (DIR): DIR/ports (the ports it picked and the options
of its start: --fast, --archive, ARCHIVE_TIMEOUT, the sentinels'), PostgreSQL's data in DIR/pg
(its socket there too), the pgBackRest configuration DIR/pgbackrest/pgbackrest.conf of a start
with --archive, and PostgreSQL started and stopped with the same options each time."""

import os

from . import backup
from .clusterdir import ClusterError, read_assignments
from .postgres import pg_bin, pg_ctl_start, pg_ctl_stop, postmaster_running
from .process import HarnessError


class LocalServers:
    """The servers scripts/local-servers.sh started in DIR: its DIR/ports, DIR/pg, and the
    pgBackRest configuration DIR/pgbackrest/pgbackrest.conf when it archives."""

    def __init__(self, directory):
        self.path = os.path.abspath(directory)
        self.data = os.path.join(self.path, "pg")
        self.config = os.path.join(self.path, "pgbackrest", "pgbackrest.conf")
        self.ports = {}

    def load(self):
        if not os.path.isfile(os.path.join(self.path, "ports")):
            raise ClusterError("no servers in %s" % self.path)
        self.ports = read_assignments(os.path.join(self.path, "ports"))
        return self

    def archives(self):
        """Started with --archive (DIR/ports loaded)."""
        return self.ports.get("ARCHIVE") == "1" and os.path.isfile(self.config)

    def conninfo(self):
        return "host=%s port=%s user=postgres dbname=rocket_rides connect_timeout=5" % (
            self.data, self.ports["PG_PORT"])

    def database_url(self):
        return "postgresql://postgres@127.0.0.1:%s/rocket_rides" % self.ports["PG_PORT"]

    def pg_options(self):
        """The server's options, from DIR/ports (the same on every start); PG_EXTRA_OPTS from the
        environment after them. pg_ctl hands them to a shell: quoted values may hold spaces."""
        opts = "-p %s -k %s -c listen_addresses=127.0.0.1 -c max_connections=300" % (self.ports["PG_PORT"], self.data)
        if self.ports.get("FAST") == "--fast":
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        if self.ports.get("ARCHIVE") == "1":
            opts += " -c archive_mode=on -c archive_timeout=%s" % (self.ports.get("ARCHIVE_TIMEOUT") or "60")
            opts += ' -c "archive_command=%s"' % backup.archive_command(self.config)
        if os.environ.get("PG_EXTRA_OPTS"):
            opts += " " + os.environ["PG_EXTRA_OPTS"]
        return opts

    def start_postgres(self, seconds):
        """pg_ctl start, waiting up to `seconds` for connections (a restored server takes them once
        its recovery is consistent)."""
        pg_ctl_start(self.data, os.path.join(self.data, "server.log"), seconds, self.pg_options())

    def stop_postgres(self):
        """A fast stop, and an immediate one if that did not end it in a minute: the callers (stop,
        and a restore that wipes the data directory next) need the server gone."""
        if not os.path.isfile(os.path.join(self.data, "postmaster.pid")):
            return
        try:
            pg_bin()
        except HarnessError:
            return  # no PostgreSQL installed: nothing of it runs
        for seconds, mode in ((60, "fast"), (30, "immediate")):
            if pg_ctl_stop(self.data, seconds, mode, quiet=True):
                return

    def postgres_alive(self):
        return postmaster_running(self.data) is not None
