"""`python3 -m rrsuite server KIND ...`: one server started the way the package starts it, for the
scripts in bash (the crashed-leader test, the local backup test's stand-in provider),
so that each server's command line, configuration and readiness wait are written once. Each
returns once the server is ready, prints its pid on stdout when it is a process of ours (Redis
daemonizes: its pid file says), and exits 1 with one line on stderr if it could not start. The
processes run detached: they outlive this command; the caller stops them (by pid, or as
scripts/local-servers.sh stop does). scripts/local-servers.sh runs the same functions in-process
(local_servers_cli.py), and says their failures in the same words.

  redis PORT DIR PIDFILE LOGFILE [--replica-ready] [--replicaof MASTER_PORT]
  sentinels DIR MASTER_PORT PORT...   Redis Sentinels watching the master as "rocket-rides", in
                                   DIR/sentinel-1.. (sentinel.py), ready once they see it, each
                                   other and its replica; SENTINEL_DOWN_AFTER_MS (1000) and
                                   SENTINEL_FAILOVER_TIMEOUT_MS (3000) from the environment
  pgbouncer DIR PG_PORT PORT LOGFILE WRITER   the site file DIR/pgbouncer.ini (deploy/pgbouncer.ini
                                   included), PgBouncer as postgres when root, ready once a query
                                   passes, its policy checked
  haproxy PORT STATS_PORT API1_PORT API2_PORT LOGFILE   deploy/haproxy.cfg, ready once its stats
                                   answer (whether the APIs are UP is the caller's to wait for)
  provider BIN_DIR PORT LOGFILE    the stand-in, with this environment (STRIPE_API_KEY, MOCK_*)
  api BIN_DIR PORT LOGFILE         rocket-rides-api with this environment; not waited for
                                   (callers start several, then wait for each)
  postgres-init DATA_DIR LOGFILE   initdb (trust, UTF8, no sync), as postgres when root
  postgres-start DATA_DIR LOGFILE SECONDS OPTIONS   pg_ctl start with these server options,
                                   waiting up to SECONDS for connections"""

import os
import sys

from . import daemons, haproxy, pgbouncer, postgres, provider, redis, sentinel
from .members import as_user
from .process import HarnessError, Process


def _log(path):
    """Process's log_dir and name for a log file path (NAME.log)."""
    directory, base = os.path.split(os.path.abspath(path))
    return directory, base[:-4] if base.endswith(".log") else base


def _detached(argv, env, logfile, port=None):
    log_dir, name = _log(logfile)
    return Process(name, argv, env, log_dir, port=port, detached=True, header="").start()


def run(kind, args):
    env = dict(os.environ)
    if kind == "redis":
        port, directory, pidfile, logfile = args[:4]
        replicaof = args[args.index("--replicaof") + 1] if "--replicaof" in args else None
        redis.start(int(port), directory, pidfile, logfile, "--replica-ready" in args, replicaof=replicaof)
        return None
    if kind == "sentinels":
        directory, master_port, ports = args[0], int(args[1]), [int(port) for port in args[2:]]
        if not ports:
            raise HarnessError("which ports?")
        sentinel.start(directory, master_port, ports, down_after_ms=int(env.get("SENTINEL_DOWN_AFTER_MS") or 1000),
                       failover_timeout_ms=int(env.get("SENTINEL_FAILOVER_TIMEOUT_MS") or 3000))
        return None
    if kind == "pgbouncer":
        directory, pg_port, port, logfile, writer = args[:5]
        problem = pgbouncer.write_site(directory, pg_port, port, writer)
        if problem:
            raise HarnessError(problem)
        process = _detached(as_user(pgbouncer.argv(directory), pgbouncer.USER), env, logfile, int(port))
        pgbouncer.wait_ready(process, int(port))
        problems = pgbouncer.policy_problems(int(port))
        if problems:
            raise HarnessError("PgBouncer does not run deploy/pgbouncer.ini: " + "; ".join(problems))
        return process
    if kind == "haproxy":
        port, stats, api1, api2, logfile = args[:5]
        env.update(haproxy.env(int(port), int(stats), [int(api1), int(api2)]))
        process = _detached(haproxy.argv(), env, logfile, int(stats))
        return process.wait_http(haproxy.HEALTH_PATH, 10)
    if kind == "provider":
        bin_dir, port, logfile = args[:3]
        log_dir, name = _log(logfile)
        return provider.start(bin_dir, env, log_dir, port=int(port), name=name, detached=True, header="")
    if kind == "api":
        bin_dir, port, logfile = args[:3]
        log_dir, name = _log(logfile)
        return daemons.start_api(os.path.join(bin_dir, "rocket-rides-api"), env, log_dir, name, int(port), wait=False,
                                 detached=True, header="")
    if kind == "postgres-init":
        postgres.initdb(args[0], args[1])
        return None
    if kind == "postgres-start":
        data, logfile, seconds, options = args[:4]
        postgres.pg_ctl_start(data, logfile, int(seconds), options)
        return None
    raise HarnessError("unknown server kind %r" % kind)


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        process = run(argv[0], argv[1:])
    except (HarnessError, ValueError, IndexError) as error:
        print("rrsuite server %s: %s" % (argv[0], error or "missing arguments"), file=sys.stderr)
        return 1
    if process is not None:
        print(process.proc.pid, flush=True)
    return 0
