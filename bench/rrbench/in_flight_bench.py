"""bench/in_flight_bench.sh: the coalescer at low concurrency. New keys with one batch of a kind in
flight against two (DATABASE_BATCHES_IN_FLIGHT=1 and 2, two APIs on one database), side by side
with pgbench running the article's minimum SQL (bench/article_minimum_sql.sql on
bench/article_schema.sql) at 32 and 128 connections, on a durable (fsync on) throwaway
PostgreSQL; and the state of the database that each run starts from, cold beside steady.

  bench/in_flight_bench.sh [BUILD_DIR]   default build-apibench (built Release if binaries are missing)
  env: DURATION=15 (seconds per run)  ROUNDS=3 (alternating rounds; each ratio is the median's)
       FILL_SECONDS=30 (new keys at 128 that bring the database to its steady state)
       STATS_SETTLE=11 (PostgreSQL 15 reports an idle backend's counts up to 10 s late)
       ARTICLE_DB=fresh|grown (the article's database in each of its runs, below)
       RESULTS_FILE=bench/results/in_flight_bench-<date>.md

The article's floor runs on a database in a stated state, printed with its rows: with
ARTICLE_DB=fresh (the default, as an independent harness measures it) the database is dropped and
loaded again from bench/article_schema.sql before each of its runs; with ARTICLE_DB=grown it is
the one database of the whole bench run, each run starting where the last one left it. In a grown
one every run writes more full-page images per key (its random-key indexes have more pages to
touch first after each checkpoint), its tables outgrow shared_buffers beside the API's database,
and autovacuum runs in some of its runs and not others: docs/bench-results/2026-12-06-article-floor.md.
The SQL is the article's either way.

The cold state is the database `migrate` just made: empty tables, no statistics, the plans
PostgreSQL makes for them, relations that grow page by page and WAL segments created rather than
recycled. The steady state is the same database after FILL_SECONDS of new keys, VACUUM ANALYZE
and a checkpoint: what a database in service looks like. Both are measured with the same API (two
in flight); each run prints what PostgreSQL did for it per new key (sequential tuples read, index
scans, WAL bytes, full-page images, pages the relations grew by, WAL segments, autovacuum and
autoanalyze runs, checkpoints after the one each run starts with, MultiXacts, the tables read
sequentially most), which says where a cold run's time goes.

Verdicts (informational, the exit status is the data check's): new keys at 32 with two in flight
at least 1.2 x the article minimum, at 128 no loss against one in flight (at least 0.95 x), and
commits per new key with each setting."""

import os
import subprocess
import time

from . import cpu
from .api_bench import release_binaries
from .api_servers import Bench
from .base import BENCH, LUA_DIR, BenchError, cores, env_int, psql, require_tools, run_to_file, say, warn
from .data_check import check_data
from .measure import Measure
from rrsuite.paths import REPO

TAG = "/* api_bench */ "
FIGURES = ("commits", "seq_tup_read", "idx_scan", "wal_bytes", "wal_fpi", "pages", "wal_files", "maintenance",
           "checkpoints", "multixacts", "mx_members")


def state_counts(url):
    """What PostgreSQL did, read from its own views. The WAL and checkpoint counters are the
    cluster's (nothing else runs during a measured run); the rest the database's."""
    out = psql(url, TAG + """
    SELECT 'commits', xact_commit FROM pg_stat_database WHERE datname = current_database()
    UNION ALL SELECT 'keys', count(*) FROM idempotency_keys WHERE response_code = 201
    UNION ALL SELECT 'seq_tup_read', coalesce(sum(seq_tup_read), 0) FROM pg_stat_user_tables
    UNION ALL SELECT 'idx_scan', coalesce(sum(idx_scan), 0) FROM pg_stat_user_tables
    UNION ALL SELECT 'maintenance', coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables
    UNION ALL SELECT 'pages', (coalesce(sum(pg_total_relation_size(relid)), 0) / 8192)::bigint FROM pg_stat_user_tables
    UNION ALL SELECT 'wal_bytes', wal_bytes::bigint FROM pg_stat_wal
    UNION ALL SELECT 'wal_fpi', wal_fpi FROM pg_stat_wal
    UNION ALL SELECT 'wal_files', count(*) FROM pg_ls_waldir()
    UNION ALL SELECT 'checkpoints', checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter""")
    return {k: int(v) for k, v in (line.split("|") for line in out.split())}


def seq_scans(url):
    """Sequential scans per table so far: {table: (scans, tuples)}."""
    out = psql(url, TAG + "SELECT relname, seq_scan, seq_tup_read FROM pg_stat_user_tables ORDER BY relname")
    return {name: (int(s), int(t)) for name, s, t in (line.split("|") for line in out.split())}


def multixacts(url):
    """MultiXacts made so far and their members (cluster-wide), as of the last checkpoint. Every
    transaction that inserts a row referencing a users row takes a KEY SHARE lock on it (the
    foreign key check); when another transaction holds one on the same row, the lock is a new
    MultiXact with all of them as members."""
    out = psql(url, TAG + "SELECT 'multixacts', next_multixact_id::text::bigint FROM pg_control_checkpoint() "
               "UNION ALL SELECT 'mx_members', next_multi_offset::text::bigint FROM pg_control_checkpoint()")
    return {k: int(v) for k, v in (line.split("|") for line in out.split())}


def main(argv):
    os.chdir(REPO)
    build = argv[0] if argv else "build-apibench"
    duration = env_int("DURATION", 15)
    rounds = env_int("ROUNDS", 3)
    fill_seconds = env_int("FILL_SECONDS", 30)
    stats_settle = env_int("STATS_SETTLE", 11)
    article_db = os.environ.get("ARTICLE_DB") or "fresh"
    if article_db not in ("fresh", "grown"):
        raise BenchError("ARTICLE_DB is fresh or grown, not '%s'" % article_db, 2)
    results_file = os.environ.get("RESULTS_FILE") or os.path.join(
        "bench", "results", "in_flight_bench-%s.md" % time.strftime("%Y%m%d-%H%M%S"))
    bin_dir = release_binaries(build)
    require_tools("in_flight_bench", "wrk", "pgbench", "psql", "python3")

    with Bench("in_flight_bench", bin_dir, duration, stats_settle) as b:
        # The API start_servers starts runs two batches of a kind in flight; the second, one.
        os.environ["DATABASE_BATCHES_IN_FLIGHT"] = "2"
        try:
            b.start_servers()
        finally:
            del os.environ["DATABASE_BATCHES_IN_FLIGHT"]
        b.env.pop("DATABASE_BATCHES_IN_FLIGHT", None)
        api2_url = b.api_url
        api1 = b.start_api("api-one-in-flight", DATABASE_BATCHES_IN_FLIGHT="1")
        api1_url = "http://127.0.0.1:%d" % api1.port
        m = Measure(b)
        m.pgbench_scripts()
        if not b.article_ok:
            raise BenchError("the article's schema did not load (above)")
        state_path = b.file("state.tsv")
        open(state_path, "w").close()

        def counted_run(label, url, run):
            """One measured run with the state counts of the database at URL around it (read after
            STATS_SETTLE on both sides, the MultiXacts after a checkpoint of their own); appends
            "label keys figures" to state.tsv and prints them per new key, with the tables read
            sequentially most."""
            before = {}

            def state_before():  # after measure's checkpoint, right before the load starts
                before.update(state_counts(url), **multixacts(b.database_url))
                before["seq"] = seq_scans(url)
            time.sleep(stats_settle)
            m.before_load = state_before
            try:
                run()
            finally:
                m.before_load = None
            time.sleep(stats_settle)
            after = state_counts(url)
            seq_after = seq_scans(url)
            b.sql(TAG + "CHECKPOINT")
            after.update(multixacts(b.database_url))
            n = after["keys"] - before["keys"]
            v = {name: after[name] - before[name] for name in FIGURES}
            with open(state_path, "a") as f:
                f.write("%s\t%d\t%s\n" % (label, n, "".join(" %s=%d" % (name, v[name]) for name in FIGURES)))
            if n == 0:
                line = " none"
            else:
                line = (" commits %.2f, seq tuples read %.1f, index scans %.1f, WAL %.0f B, full-page images %.3f,"
                        % (v["commits"] / n, v["seq_tup_read"] / n, v["idx_scan"] / n, v["wal_bytes"] / n,
                           v["wal_fpi"] / n)
                        + " MultiXacts %.3f (%.1f members each)," % (
                            v["multixacts"] / n, v["mx_members"] / v["multixacts"] if v["multixacts"] else 0)
                        + " pages grown per 1000 keys %.1f; WAL segments +%d, autovacuum/analyze runs %d, "
                          "checkpoints %d" % (v["pages"] * 1000 / n, v["wal_files"], v["maintenance"],
                                              v["checkpoints"]))
            say("    per new key (%d keys):%s" % (n, line))
            scanned = []
            for table, (scans, tuples) in seq_after.items():
                s0, t0 = before["seq"].get(table, (0, 0))
                if scans - s0 > 0:
                    scanned.append((tuples - t0, table, scans - s0, "%.1f" % ((tuples - t0) / n if n > 0 else 0)))
            scanned.sort(key=lambda x: x[0], reverse=True)
            say("    read sequentially most (table: scans, tuples per new key):"
                + "".join(" %s: %d, %s;" % (table, scans, per) for _, table, scans, per in scanned[:3]))

        def keys_run(label, connections, url):
            counted_run(label, b.database_url, lambda: m.wrk_run(label, "new_keys.lua", connections, url=url))

        def article_counted_run(label, connections):
            """The article's minimum SQL on its database in the state ARTICLE_DB names (fresh:
            dropped and loaded again from bench/article_schema.sql first)."""
            if article_db == "fresh" and not b.load_article(drop=True):
                raise BenchError("bench/article_schema.sql could not be loaded again (%s)"
                                 % b.file("article-schema.log"))
            counted_run(label, b.article_url, lambda: m.article_run(label, connections))

        say("runs of %ds each (columns: rate p50 p99 2xx 409 5xx other):" % duration)
        say({"fresh": "the article minimum SQL: a fresh database for each of its runs (ARTICLE_DB=fresh)",
             "grown": "the article minimum SQL: one database grown through all the rounds (ARTICLE_DB=grown)",
             }[article_db])
        say("cold: the database migrate just made")
        keys_run("cold API new keys 32 (2 in flight)", 32, api2_url)

        say("filling for %ds, then VACUUM ANALYZE and a checkpoint (not measured)..." % fill_seconds)
        run_to_file(["wrk", "-t2", "-c128", "-d%ds" % fill_seconds, "-s", os.path.join(LUA_DIR, "new_keys.lua"),
                     api2_url], b.file("fill.out"),
                    env=dict(os.environ, BENCH_TOKEN=b.token, BENCH_RUN="fill-%s" % os.urandom(4).hex()))
        time.sleep(2)
        b.sql(TAG + "VACUUM ANALYZE")
        b.sql(TAG + "CHECKPOINT")
        b.warm_up(api1_url)

        say("steady: the same database after the fill")
        keys_run("steady API new keys 32 (2 in flight)", 32, api2_url)
        orders = {1: ("article", "one", "two"), 2: ("two", "article", "one"), 0: ("one", "two", "article")}
        for r in range(1, rounds + 1):
            for n in (32, 128):
                for which in orders[r % 3]:
                    if which == "article":
                        article_counted_run("article minimum SQL %d #%d" % (n, r), n)
                    elif which == "one":
                        keys_run("API new keys %d one in flight #%d" % (n, r), n, api1_url)
                    else:
                        keys_run("API new keys %d two in flight #%d" % (n, r), n, api2_url)
        check_data(b)

        os.makedirs(os.path.dirname(os.path.abspath(results_file)), exist_ok=True)
        report = subprocess.run(["python3", os.path.join(BENCH, "in_flight_verdicts.py"), m.rows, state_path,
                                 str(rounds), str(cpu.CLK), article_db], stdout=subprocess.PIPE,
                                check=True).stdout.decode().rstrip("\n")
        say("\n" + report)
        with open(results_file, "w") as f:
            f.write("# bench/in_flight_bench.sh, %s, %d cores, %ds per run, %d rounds, ARTICLE_DB=%s\n\n%s\n" % (
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), cores(), duration, rounds, article_db, report))
        say("\nwritten to %s" % results_file)
        if b.figures.get("data_ok") != "1":
            warn("!!! DATA CHECK FAILED: a benchmark that loses data is not a result")
            raise BenchError("", 1)
    return 0
