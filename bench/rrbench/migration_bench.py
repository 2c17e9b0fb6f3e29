"""bench/migration_bench.sh: how long sql/012-014 (the HOT-friendly schema, the 201 stored without its
body) take on a database of KEYS finished keys (default 1,000,000, each with its ride, audit record
and no staged job left), and whether writers notice: pgbench runs the minimum SQL of new keys
(bench/minimum_sql.sql) at 8 clients during the whole migration, and the bench prints the
migration's time, the longest new-key transaction while it ran against the longest one before
it, and the schema it ends with.

  bench/migration_bench.sh BIN_DIR     (rocket-rides-api from any build)
  env: KEYS=1000000

Starts its own durable PostgreSQL on a free loopback port in a temporary directory (initdb and
pg_ctl as tools/rrsuite's postgres.py runs them, as the postgres user when root), and stops it at
the end."""

import contextlib
import glob
import os
import re
import threading
import time

from .base import MINIMUM_SQL, BenchError, Workdir, env_int, psql, psql_value, read, run_to_file, say, warn
from rrsuite import postgres
from rrsuite.paths import REPO
from rrsuite.ports import free_port


def main(argv):
    os.chdir(REPO)
    if not argv:
        raise BenchError("usage: bench/migration_bench.sh BIN_DIR", 2)
    bin_dir = os.path.abspath(argv[0])
    if not os.path.isdir(bin_dir):
        raise BenchError("no directory %s" % argv[0], 2)
    keys = env_int("KEYS", 1000000)

    with Workdir("rocket-rides-migration-bench") as d, contextlib.ExitStack() as stack:
        data = d.file("pg")
        port = free_port()
        postgres.initdb(data, d.file("initdb.log"))
        stack.callback(lambda: postgres.pg_ctl_stop(data, 60, "fast", quiet=True))
        postgres.pg_ctl_start(data, os.path.join(data, "log"), 60, "-p %d -k %s -c listen_addresses=127.0.0.1 "
                              "-c shared_buffers=256MB -c max_wal_size=4GB" % (port, data))
        os.environ["PGOPTIONS"] = "-c client_min_messages=warning"
        admin = "postgresql://postgres@127.0.0.1:%d/postgres" % port
        url = "postgresql://postgres@127.0.0.1:%d/rocket_rides" % port
        psql(admin, "CREATE DATABASE rocket_rides")

        # The schema as a deployed database has it before 012: the numbered migrations up to 011, recorded.
        for f in sorted(glob.glob("sql/0[01][0-9]_*.sql")):
            if int(os.path.basename(f)[:3]) <= 11:
                psql(url, file=f)
        psql(url, "CREATE TABLE schema_migrations (version INT PRIMARY KEY, name TEXT NOT NULL, "
             "applied_at TIMESTAMPTZ NOT NULL DEFAULT now()); "
             "INSERT INTO schema_migrations (version, name) SELECT g, 'before 012' FROM generate_series(1, 11) g;")
        user_id = psql_value(url, "INSERT INTO users (email, stripe_customer_id) "
                             "VALUES ('bench@example.com', 'cus_bench') RETURNING id")

        started = time.monotonic()
        psql(url, stdin="""
INSERT INTO idempotency_keys (user_id, idempotency_key, request_method, request_path, request_params, origin_ip,
    recovery_point, response_code, response_body, locked_at, created_at, last_run_at)
SELECT %(user)s, 'migration-bench-key-' || g, 'POST', '/rides',
       '{"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712}', '127.0.0.1',
       'finished', 201, '{"message":"Ride created and charged."}', NULL,
       now() - interval '48 hours' + g * interval '100 microseconds', now()
FROM generate_series(1, %(keys)d) g;
INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, stripe_charge_id, user_id)
SELECT id, 37.7749, -122.4194, 37.8044, -122.2712, 'ch_' || id, user_id FROM idempotency_keys;
INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
SELECT 'create_ride', request_params, '127.0.0.1', id, 'ride', user_id FROM idempotency_keys;
VACUUM ANALYZE;
""" % {"user": user_id, "keys": keys})
        say("loaded %d keys with their rides and audit records in %.0f s" % (keys, time.monotonic() - started))

        # Writers before and during the migration: the longest new-key transaction pair in each
        # span. pgbench runs in 2 s pieces so that each writes its whole log (an interrupted one
        # would not). The minimum SQL stores a finished 201 without its body, which only 013
        # allows: the writers here store a short body, valid before, during and after it.
        writer = read(MINIMUM_SQL).replace("response_body = NULL,", "response_body = '{}',")
        if "response_body = '{}'," not in writer:
            raise BenchError("cannot adapt bench/minimum_sql.sql")
        with open(d.file("writer.sql"), "w") as f:
            f.write(writer)

        def piece(prefix):
            argv = ["pgbench", "-n", "-M", "prepared", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-c", "8",
                    "-j", "2", "-T", "2", "-f", d.file("writer.sql"), "-D", "user_id=%s" % user_id, "-l",
                    "--log-prefix=" + prefix, "rocket_rides"]
            if run_to_file(argv, d.file(prefix + ".out"), cwd=d.path, append=True) != 0:
                warn("migration_bench: pgbench failed during %s:" % prefix)
                warn("\n".join(read(d.file(prefix + ".out")).splitlines()[-3:]))

        for i in range(1, 6):
            piece("before%d" % i)
        migrated = threading.Event()

        def during():
            n = 0
            while not migrated.is_set():
                n += 1
                piece("during%d" % n)
        writers = threading.Thread(target=during)
        writers.start()
        try:
            time.sleep(2)
            started = time.monotonic()
            status = run_to_file([os.path.join(bin_dir, "rocket-rides-api"), "migrate"], d.file("migrate.log"),
                                 env={"PATH": os.environ.get("PATH", ""), "DATABASE_URL": url})
            migrate_s = time.monotonic() - started
        finally:
            migrated.set()
            writers.join()
        if status != 0:
            warn(read(d.file("migrate.log")))
            raise BenchError("", 1)

        before, during_ = latencies(d.path, "before"), latencies(d.path, "during")
        say("migrate to 012-014 on %d keys: %.1f s" % (keys, migrate_s))
        say("longest new-key transaction pair (8 pgbench clients): %.1f ms in 10 s before (%d pairs), %.1f ms during "
            "the migration (%d pairs)" % (max(before, default=0) / 1000, len(before), max(during_, default=0) / 1000,
                                          len(during_)))
        say(psql(url, "SELECT 'indexes on the hot tables: ' || string_agg(indexrelid::regclass::text, ' ') "
                 "FROM pg_index WHERE indrelid IN ('idempotency_keys'::regclass, 'rides'::regclass, "
                 "'audit_records'::regclass, 'staged_jobs'::regclass)").strip())
        say(psql(url, "SELECT 'invalid indexes: ' || count(*) FROM pg_index WHERE NOT indisvalid").strip())
    return 0


def latencies(directory, prefix):
    """The transactions' latencies (µs, the third field) in the pgbench logs PREFIX*.N..."""
    values = []
    for path in glob.glob(os.path.join(directory, prefix + "*")):
        if re.fullmatch(re.escape(prefix) + r"\d+\.\d+(\.\d+)?", os.path.basename(path)):
            for line in read(path).splitlines():
                fields = line.split()
                if len(fields) >= 3:
                    values.append(float(fields[2]))
    return values
