"""bench/api_bench.sh: the API's benchmark. POST /rides under wrk beside pgbench running the exact
SQL of one request, on a durable (fsync on) throwaway PostgreSQL, with CPU per process, the API's
memory, a check that the API executes the statements the pgbench script does, and a check that no
ride, charge or receipt was lost ("a benchmark that loses data is not a result").

  bench/api_bench.sh [BUILD_DIR]     default build-apibench (built Release if binaries are missing)
  env: DURATION=15 (seconds per run)  MEMORY_SECONDS=60 (the mixed run at 128 before reading RSS)
       ROUNDS=3 (alternating pairs for the verdicts that compare two figures: pgbench / API at 32,
       API at 32 / 128; the disk of a shared machine drifts by tens of percent between runs, so
       each verdict uses the median pair)
       RESULTS_FILE=bench/results/api_bench-<date>.md (the table is written there too)
       STATS_SETTLE=11 (seconds to wait before reading pg_stat_database: an idle PostgreSQL 15
       backend reports its counts up to 10 s late)  REPLAY_DB_KEYS=2000 (replays from the database)

Runs: pgbench new-key SQL at 8/32/128 clients; the API with new keys, replays of one key and a
90/10 mix of new keys and retries at 8/32/128 connections (wrk -t2, bench/api_bench/*.lua);
pgbench replay SQL at 32. The production topology: new keys through PgBouncer
(deploy/pgbouncer.ini, transaction pooling, an API with DATABASE_PREPARED_STATEMENTS=off) beside
the direct API (prepared statements, straight to PostgreSQL) at 32 and 128, ROUNDS alternating
pairs; then 512 connections through HAProxy (deploy/haproxy.cfg) in front of two such APIs,
sampling PostgreSQL's client backends against PgBouncer's pool size.
The design's floor: "pgbench minimum SQL 32 #r" (bench/minimum_sql.sql, the least SQL the design
allows, on the product's schema) in the same alternating rounds; CPU per request of the API and
of PostgreSQL for every run (from /proc); database round trips per new key and per replay that
is not in the API's memory, counted by PgBouncer (SHOW STATS) independently of the API; commits
per new key (pg_stat_database); "nginx same replay bytes N" beside "API replay N" (an nginx
answering POST /rides with the API's replay answer, byte for byte); and a cost table at the end.
The article's floor: "pgbench article minimum SQL 32 #r" and "... 128 #r", the seed article's
minimum SQL (bench/article_minimum_sql.sql, -M prepared) on the article's schema
(bench/article_schema.sql) in a database of its own, each paired in the rounds with "API new
keys 32 #r" / "... 128 #r"; the HOT share of the updates on the hot tables over the API's new-key
runs and over the article's; round trips (PgBouncer) and commits (pg_stat_database) per new key
at 32 and at 128. A part of these that fails says so in one line and the bench goes on; its
verdicts then FAIL as "not measured".
Exits non-zero if the data check or the statement-count check fails; the targets are informational.

The parts: api_servers.py starts the servers, cpu.py accounts CPU from /proc, measure.py runs the
load generators and writes a row per run, api_counts.py and allocations.py count what a request
costs, this file orders the runs, data_check.py checks the data, and bench/verdicts.py prints the
table and the verdicts from the rows and the figures."""

import os
import subprocess
import time

from . import cpu, wrk
from .allocations import count_allocations
from .api_counts import Counts
from .api_servers import Bench
from .base import (ARTICLE_SQL, BENCH, MINIMUM_SQL, BenchError, cores, env_int, psql_value, read, require_tools, say,
                   warn)
from .data_check import check_data
from .measure import Measure, script_statements
from rrsuite.paths import REPO

CONNECTIONS = (8, 32, 128)
POOLED_CONNECTIONS = (32, 128)
HAPROXY_LABEL = "API new keys 512 via HAProxy, 2 APIs, PgBouncer"
FIGURES = """clk rounds duration memory_seconds haproxy_label
  sql_per_new_key sql_per_new_key_unprepared api_per_key pgb_per_key api_commits_per_key api_commits_per_key128
  rounds_commits_per_key minimum_statements minimum_commits article_statements article_commits
  rt_new_key rt_wakeup xact_new_key rt_new_key128 rt_wakeup128 xact_new_key128 rt_replay rt_replays_sent xact_replay
  hot_api_idempotency_keys hot_api_rides hot_api_audit_records hot_api_staged_jobs
  hot_article_idempotency_keys hot_article_rides hot_article_audit_records hot_article_staged_jobs
  allocs_new_key syscalls_new_key allocs_replay syscalls_replay rss_kib hwm_kib mock_rss_kib
  haproxy_socket_errors haproxy_downs haproxy_none haproxy_nosrv
  pg_backends_max pg_backends_samples pool_bound pool_bound_text max_db_connections keys_201 data_ok""".split()


def release_binaries(build):
    """BUILD_DIR/bin (absolute), configuring and building BUILD_DIR as Release first if the API,
    the stand-in provider or the pgbench script printer is not there."""
    bin_dir = os.path.join(os.path.abspath(build), "bin")
    for name in ("rocket-rides-api", "rocket-rides-stripe-mock", "rocket-rides-bench-sql"):
        if not os.access(os.path.join(bin_dir, name), os.X_OK):
            if subprocess.run([os.path.join(REPO, "scripts", "build.sh"), build, "-DCMAKE_BUILD_TYPE=Release",
                               "-DROCKET_RIDES_TESTS=OFF"]).returncode != 0:
                raise BenchError("the build of %s failed" % build)
            break
    return bin_dir


def status_line(path, key):
    for line in read(path).splitlines():
        if line.startswith(key + ":"):
            return line.split()[1]
    return ""


def main(argv):
    os.chdir(REPO)
    build = argv[0] if argv else "build-apibench"
    duration = env_int("DURATION", 15)
    rounds = env_int("ROUNDS", 3)
    memory_seconds = env_int("MEMORY_SECONDS", 60)
    stats_settle = env_int("STATS_SETTLE", 11)
    replay_db_keys = env_int("REPLAY_DB_KEYS", 2000)
    results_file = os.environ.get("RESULTS_FILE") or os.path.join(
        "bench", "results", "api_bench-%s.md" % time.strftime("%Y%m%d-%H%M%S"))
    bin_dir = release_binaries(build)
    require_tools("api_bench", "wrk", "pgbench", "psql", "curl", "python3", "pgbouncer", "haproxy", "nginx")

    with Bench("api_bench", bin_dir, duration, stats_settle) as b:
        f = b.figures
        b.start_servers()
        m = Measure(b)
        c = Counts(b, m)
        m.pgbench_scripts()
        f["minimum_statements"] = str(script_statements(MINIMUM_SQL) or "")
        f["article_statements"] = str(script_statements(ARTICLE_SQL) or "")

        say("runs of %ds each (columns: rate p50 p99 2xx 409 5xx other):" % duration)
        runs_new_keys(b, m, c)
        runs_new_key_rounds(b, m, c, rounds)
        runs_replays(b, m, rounds)
        runs_mixed(b, m, rounds, memory_seconds)
        b.start_pgbouncer()
        runs_pooled(b, m, c, rounds, replay_db_keys)
        run_haproxy(b, m, c)
        count_allocations(b)
        check_data(b)

        f.update(clk=str(cpu.CLK), rounds=str(rounds), duration=str(duration), memory_seconds=str(memory_seconds),
                 haproxy_label=HAPROXY_LABEL)
        with open(b.file("figures.tsv"), "w") as out:
            out.write("".join("%s\t%s\n" % (name, f.get(name) or "") for name in FIGURES))
            out.write("cores\t%d\n" % cores())

        os.makedirs(os.path.dirname(os.path.abspath(results_file)), exist_ok=True)
        report = subprocess.run(["python3", os.path.join(BENCH, "verdicts.py"), m.rows, b.file("figures.tsv")],
                                stdout=subprocess.PIPE, check=True).stdout.decode().rstrip("\n")
        say("\n" + report)
        with open(results_file, "w") as out:
            out.write(report + "\n")
        say("\nwritten to %s" % results_file)

        if f.get("data_ok") != "1":
            warn("!!! DATA CHECK FAILED: a benchmark that loses data is not a result")
            raise BenchError("", 1)
        if c.statement_check_failed:
            warn("!!! STATEMENT COUNT MISMATCH (see above): the API/pgbench ratio compares different work")
            raise BenchError("", 1)
    return 0


def runs_new_keys(b, m, c):
    """pgbench on the new-key SQL, then the API with new keys, at 8/32/128. The API's run at 32 also
    counts its statements per new key; the runs at 32 and at 128 each its commits per new key; the
    snapshot before the run at 32 also starts the HOT counts over all the API's new-key runs."""
    for n in CONNECTIONS:
        m.pgbench_run("pgbench new-key SQL %d" % n, b.file("new_key.sql"), n)
    b.warm_up(b.api_url)
    for n in CONNECTIONS:
        if n == 32:
            c.stats_snapshot("before32")
            c.statements_reset()
        m.wrk_run("API new keys %d" % n, "new_keys.lua", n)
        if n == 32:
            b.figures["api_per_key"] = c.statements_read("direct",
                                                         "the API straight to PostgreSQL (prepared statements)")
            c.stats_snapshot("after32")
            c.api_commits_read(32, "before32", "after32")
        elif n == 128:
            c.stats_snapshot("after128")
            c.api_commits_read(128, "after32", "after128")


def runs_new_key_rounds(b, m, c, rounds):
    """Side by side: pgbench and the API alternate at 32; so do 32 and 128 ("no collapse at 128").
    pgbench running the minimum SQL joins each round, right after the product's SQL. The article's
    minimum SQL pairs with the API's new keys at 32 and at 128, the article first in odd rounds and
    the API first in even ones, so that neither side always runs second."""
    for r in range(1, rounds + 1):
        m.pgbench_run("pgbench new-key SQL 32 #%d" % r, b.file("new_key.sql"), 32)
        if b.minimum_ok:
            if r == 1 and not c.minimum_counts_begin():
                warn("  api_bench: cannot read the minimum SQL's counts before its run")
            ran = m.pgbench_run("pgbench minimum SQL 32 #%d" % r, MINIMUM_SQL, 32, protocol="prepared", soft=True)
            if ran and r == 1:
                if not c.minimum_counts_end("pgbench minimum SQL 32 #1"):
                    warn("  api_bench: cannot read the minimum SQL's statement and commit counts")
        order = ("article", "api") if r % 2 == 1 else ("api", "article")
        for n in (32, 128):
            for which in order:
                if which == "api":
                    m.wrk_run("API new keys %d #%d" % (n, r), "new_keys.lua", n)
                elif b.article_ok:
                    m.article_run("pgbench article minimum SQL %d #%d" % (n, r), n, soft=True)
    c.stats_snapshot("rounds")
    c.hot_read("before32", "after128", "rounds")


def runs_replays(b, m, rounds):
    """Replays of one key, each API run beside nginx answering the same bytes (its CPU in the "api"
    column of its rows) at each connection count, then ROUNDS pairs at 32: nginx's own rate moved
    by 1.4x between single runs on this machine, more than the change a single pair can show."""
    b.replay_key = "replay-bench-key-%s-%s" % (os.urandom(4).hex(), os.urandom(4).hex())
    status = b.post_rides(b.api_url, b.replay_key, b.file("replay-first"))
    if status != "201":
        warn(read(b.file("replay-first.body")))
        raise BenchError("creating the replay key answered %s" % status)
    nginx = b.nginx_start()
    if nginx is None:
        warn("api_bench: nginx could not answer with the API's replay bytes; the nginx rows are left out")

    def nginx_run(n, suffix=""):
        # The "api" column of nginx's rows: nginx and its workers.
        children = subprocess.run(["pgrep", "-P", str(nginx.proc.pid)], stdout=subprocess.PIPE).stdout.split()
        m.api_override = [nginx.proc.pid] + [int(p) for p in children]
        try:
            m.wrk_run("nginx same replay bytes %d%s" % (n, suffix), "replay.lua", n,
                      url="http://127.0.0.1:%d" % nginx.port, soft=True)
        finally:
            m.api_override = None
    for n in CONNECTIONS:
        m.wrk_run("API replay %d" % n, "replay.lua", n)
        if nginx:
            nginx_run(n)
    if nginx:
        for r in range(1, rounds + 1):
            m.wrk_run("API replay 32 #%d" % r, "replay.lua", 32)
            nginx_run(32, " #%d" % r)
        nginx.stop()


def runs_mixed(b, m, rounds, memory_seconds):
    """Mixed traffic (90 % new keys, 10 % retries), pgbench on the replay SQL, and the long mixed
    run at 128 after which the API's memory is read."""
    for n in CONNECTIONS:
        m.wrk_run("API mixed %d" % n, "mixed.lua", n)
    for r in range(1, rounds + 1):
        m.wrk_run("API mixed 32 #%d" % r, "mixed.lua", 32)
        m.wrk_run("API mixed 128 #%d" % r, "mixed.lua", 128)
    key = psql_value(b.pgbench_url, "SELECT idempotency_key FROM idempotency_keys WHERE response_code = 201 LIMIT 1")
    m.defines += ["-D", "replay_key=%s" % key]
    m.pgbench_run("pgbench replay SQL 32", b.file("replay.sql"), 32)

    say("memory: %ds of mixed traffic at 128 connections..." % memory_seconds)
    m.wrk_run("API mixed 128 (%ds)" % memory_seconds, "mixed.lua", 128, seconds=memory_seconds)
    b.figures["rss_kib"] = status_line("/proc/%d/status" % b.api.proc.pid, "VmRSS")
    b.figures["hwm_kib"] = status_line("/proc/%d/status" % b.api.proc.pid, "VmHWM")
    b.figures["mock_rss_kib"] = status_line("/proc/%d/status" % b.mock.proc.pid, "VmRSS")


def runs_pooled(b, m, c, rounds, replay_db_keys):
    """New keys through PgBouncer beside the direct API, in alternating pairs at 32 and 128 (which
    of the two goes first alternates too). The first pair at 32 also counts the statements of the
    API through PgBouncer, which must be the same SQL; the first pairs at 32 and at 128 its round
    trips; then the replays from the database are counted."""
    say()
    try:
        c.rt_idle()
    except BenchError:
        warn("  api_bench: cannot read PgBouncer's SHOW STATS; round trips are not measured")
    for r in range(1, rounds + 1):
        for n in POOLED_CONNECTIONS:
            order = ("direct", "pgbouncer") if r % 2 == 1 else ("pgbouncer", "direct")
            for which in order:
                if which == "direct":
                    m.wrk_run("API new keys %d direct #%d" % (n, r), "new_keys.lua", n)
                    continue
                counting = False
                if r == 1:
                    if n == 32:
                        c.statements_reset()
                    try:
                        c.rt_new_begin(n)
                        counting = True
                    except (BenchError, ValueError):
                        warn("  api_bench: cannot read PgBouncer's counts")
                m.wrk_run("API new keys %d via PgBouncer #%d" % (n, r), "new_keys.lua", n, url=b.pgb_url)
                if r == 1 and n == 32:
                    b.figures["pgb_per_key"] = c.statements_read(
                        "pgbouncer", "the API through PgBouncer (prepared statements off)",
                        b.figures["sql_per_new_key_unprepared"])
                if counting:
                    try:
                        c.rt_new_end(n)
                    except (BenchError, ValueError):
                        warn("  api_bench: cannot read PgBouncer's counts after the run")
    if getattr(c, "rt_id1", None) is not None:
        try:
            ok = c.rt_replays(replay_db_keys)
        except (BenchError, ValueError, subprocess.CalledProcessError):
            ok = False
        if not ok:
            warn("  api_bench: the replays from the database could not be counted")


def run_haproxy(b, m, c):
    """512 connections through HAProxy in front of both APIs through PgBouncer. The direct API
    stops first, so that every client backend PostgreSQL has in this database (but the sampler's
    own) is one of PgBouncer's server connections."""
    b.api.stop()
    b.apis[:] = list(b.pooled_apis)
    b.start_haproxy()
    m.before_load = c.start_sampler
    # wrk's own 2 s timeout would count slow answers as socket errors; HAProxy's "timeout server"
    # (30 s) is when a request really fails, so wrk waits as long.
    m.wrk_run(HAPROXY_LABEL, "new_keys.lua", 512, url="http://127.0.0.1:%d" % b.haproxy_port,
              options=("--timeout", "30s"))
    m.before_load = None
    c.sampler_read()
    b.figures["haproxy_socket_errors"] = wrk.socket_errors(read(b.file("run-%d.out" % m.run_index)))
    b.haproxy.stop()
    c.haproxy_counts()
