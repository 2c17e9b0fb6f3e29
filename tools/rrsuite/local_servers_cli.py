"""`python3 -m rrsuite local-servers COMMAND DIR ...`: scripts/local-servers.sh's commands (its header
says what each does; the same messages, exit codes and export lines):

  start DIR [--fast] [--sentinel] [--archive]   PostgreSQL and Redis (and Redis under Sentinel);
                                   export lines on stdout
  stop DIR                         everything it started (safe to call twice)
  env DIR                          the export lines again
  postgres-stop DIR, postgres-start DIR   PostgreSQL alone, same port and options
  backup DIR [--full|--diff], backups DIR, restore DIR ...   local_servers_backup.py

PostgreSQL refuses to run as root, so as root it runs as the postgres user."""

import glob
import os
import signal
import subprocess
import sys
import time

from . import backup, local_servers_backup, ports, redis, sentinel
from .backup import BackupError, PgBackRest
from .clusterdir import command_main
from .local_servers_dir import LocalServers
from .postgres import as_postgres, initdb, pg_bin
from .process import HarnessError

REDIS_STOP_SECONDS = 30


def parse_start(args):
    options = {"--fast": "fast", "--sentinel": "sentinel", "--archive": "archive"}
    chosen = set()
    for arg in args:
        if arg not in options:
            print("unknown option %s" % arg, file=sys.stderr)
            raise BackupError(exit_code=2)
        chosen.add(options[arg])
    return chosen


def export_lines(servers):
    p = servers.ports
    lines = ["export DATABASE_URL=" + servers.database_url(),
             "export REDIS_URL=redis://127.0.0.1:%s/0" % p["REDIS_PORT"], "export LOCAL_SERVERS_DIR=" + servers.path]
    if p.get("ARCHIVE") == "1":
        lines.append("export BACKUP_CONFIG=" + servers.config)
    if p.get("SENTINEL_PORTS"):
        lines += ["export REDIS_SENTINELS=" + ",".join("127.0.0.1:" + port for port in p["SENTINEL_PORTS"].split()),
                  "export REDIS_SENTINEL_MASTER=" + sentinel.MASTER_NAME,
                  "export REDIS_MASTER_PORT=" + p["REDIS_PORT"], "export REDIS_REPLICA_PORT=" + p["REPLICA_PORT"]]
    return lines


def print_env(servers):
    print("\n".join(export_lines(servers.load())), flush=True)


def server_step(kind, step, *args, **kwargs):
    """One server's start as `python3 -m rrsuite server KIND` reported a failure: one line, exit 1."""
    try:
        return step(*args, **kwargs)
    except HarnessError as error:
        print("rrsuite server %s: %s" % (kind, error), file=sys.stderr, flush=True)
        raise BackupError() from None


def start(servers, args):
    chosen = parse_start(args)
    try:
        pg_bin()
    except HarnessError as error:
        print(error, file=sys.stderr)
        raise BackupError() from None
    if os.path.isfile(os.path.join(servers.path, "ports")) and os.path.isfile(
            os.path.join(servers.data, "postmaster.pid")):
        print("servers already running in %s" % servers.path, file=sys.stderr, flush=True)
        return print_env(servers)
    # Below the kernel's ephemeral range, distinct from each other (ports.py).
    pg_port, redis_port = ports.free_port(), ports.free_port()
    text = "PG_PORT=%d\nREDIS_PORT=%d\nFAST=%s\nARCHIVE=%s\nARCHIVE_TIMEOUT=%s\n" % (
        pg_port, redis_port, "--fast" if "fast" in chosen else "", "1" if "archive" in chosen else "",
        os.environ.get("ARCHIVE_TIMEOUT") or "60")
    if "sentinel" in chosen:
        replica_port, sentinel_ports = ports.free_port(), [ports.free_port() for _ in range(3)]
        text += 'REPLICA_PORT=%d\nSENTINEL_PORTS="%s"\n' % (replica_port, " ".join(map(str, sentinel_ports)))
    with open(os.path.join(servers.path, "ports"), "w") as f:
        f.write(text)
    servers.load()
    if not os.path.isfile(os.path.join(servers.data, "PG_VERSION")):
        # As root the postgres user's, its parent reachable (mktemp -d makes 0700 ones).
        server_step("postgres-init", initdb, servers.data, os.path.join(servers.path, "initdb.log"))
    if "archive" in chosen:
        repo = os.environ.get("BACKUP_REPO_PATH") or os.path.join(servers.path, "backup-repo")
        backup.write_config(servers.config, repo, servers.data, pg_port, servers.data,
                            os.path.join(servers.path, "pgbackrest"), "local-servers.sh")
    server_step("postgres-start", servers.start_postgres, 60)
    if "archive" in chosen:
        PgBackRest(servers.config, local_servers_backup.say).stanza_create()
    create_database(pg_port)
    server_step("redis", redis.start, redis_port, servers.path, os.path.join(servers.path, "redis.pid"),
                os.path.join(servers.path, "redis.log"), True)
    if "sentinel" in chosen:
        start_sentinels(servers, redis_port, replica_port, sentinel_ports)
    print_env(servers)


def create_database(pg_port):
    def psql(*args):
        return subprocess.run(as_postgres(["psql", "-h", "127.0.0.1", "-p", str(pg_port), "-U", "postgres", "-d",
                                           "postgres"] + list(args)), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE)
    found = psql("-tAc", "SELECT 1 FROM pg_database WHERE datname = 'rocket_rides'")
    if "1" not in found.stdout.decode():
        if psql("-qc", "CREATE DATABASE rocket_rides").returncode != 0:
            raise BackupError()


def start_sentinels(servers, master_port, replica_port, sentinel_ports):
    """A replica of the master and three sentinels; returns once every sentinel sees the master,
    the other two sentinels and the replica with its link up, so a failover can happen at once."""
    # A directory of its own: a replica writes each full sync's RDB there, which the master must
    # not load as its own dump on a restart.
    replica_dir = os.path.join(servers.path, "replica")
    os.makedirs(replica_dir, exist_ok=True)
    server_step("redis", redis.start, replica_port, replica_dir, os.path.join(servers.path, "redis-replica.pid"),
                os.path.join(servers.path, "redis-replica.log"), True, replicaof=master_port)
    env = os.environ
    server_step("sentinels", sentinel.start, servers.path, master_port, sentinel_ports,
                down_after_ms=int(env.get("SENTINEL_DOWN_AFTER_MS") or 1000),
                failover_timeout_ms=int(env.get("SENTINEL_FAILOVER_TIMEOUT_MS") or 3000))


def stop(servers):
    servers.stop_postgres()
    # Sentinels first, so none starts a failover while the servers stop.
    pidfiles = sorted(glob.glob(os.path.join(servers.path, "sentinel-*", "sentinel.pid")))
    for pidfile in pidfiles + [os.path.join(servers.path, name) for name in ("redis-replica.pid", "redis.pid")]:
        if not os.path.isfile(pidfile):
            continue
        try:
            with open(pidfile) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            pid = None
        if pid is not None:
            stop_redis(pid)
        try:
            os.remove(pidfile)
        except OSError:
            pass


def stop_redis(pid):
    # Redis saves before it exits, which on a loaded machine took longer than the 5 s this once
    # waited: the caller then removed the directory, the save failed, and a Redis that cannot save
    # refuses to exit (one outlived its test by an hour). 30 s, then SIGKILL.
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + REDIS_STOP_SECONDS
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.05)
    local_servers_backup.say("redis pid %d did not stop within %d s; killing it" % (pid, REDIS_STOP_SECONDS))
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def run(command, directory, args):
    os.makedirs(directory, exist_ok=True)
    servers = LocalServers(directory)
    if command == "start":
        start(servers, args)
    elif command == "stop":
        stop(servers)
    elif command == "env":
        print_env(servers)
    elif command == "postgres-stop":
        servers.stop_postgres()
    elif command == "postgres-start":
        # The log starts anew (a restore wiped the directory it was in).
        server_step("postgres-start", servers.load().start_postgres, int(os.environ.get("PG_START_TIMEOUT") or 600))
    else:
        local_servers_backup.run(command, directory, args)


def main(argv):
    return command_main(argv, __doc__, run, local_servers_backup.say)
