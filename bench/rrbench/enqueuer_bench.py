"""bench/enqueuer_bench.sh, not part of ctest: the enqueuer's drain throughput from ROWS staged rows
beside a pure-SQL drain of the same batches (what Redis and the payloads cost), the cost of a
replica-acknowledged push, and NOTIFY wake-up latency p50/p99.

  bench/enqueuer_bench.sh [BUILD_DIR]        default build/ (use a Release build)
  ROWS=100000 BATCHES="100 1000" SAMPLES=200 bench/enqueuer_bench.sh build-rel

Starts its own PostgreSQL and Redis with durable commits (not fast), Redis with a replica and three
sentinels (tools/rrsuite's LocalServers, scripts/local-servers.sh --sentinel), and stops them on
exit. The acknowledged-push row drains ROWS with the default batch size twice, REDIS_MIN_REPLICAS=0
then 1, the replica attached both times (so only the WAIT differs), and prints the 1/0 throughput
ratio against the target of 0.7."""

import contextlib
import glob
import json
import os
import time

from .base import BenchError, Workdir, env_int, psql, psql_value, read, run_to_file, say
from rrsuite.local_servers import LocalServers
from rrsuite.paths import REPO
from rrsuite.process import Process, print_tail, run

QUEUE = "bench"


def main(argv):
    os.chdir(REPO)
    build = argv[0] if argv else "build"
    binary = os.path.join(build, "bin", "rocket-rides-enqueuer")
    rows = env_int("ROWS", 100000)
    batches = [int(b) for b in (os.environ.get("BATCHES") or "100 1000").split()]
    samples = env_int("SAMPLES", 200)
    if not os.access(binary, os.X_OK):
        raise BenchError("no %s: build it first (scripts/build.sh %s -DCMAKE_BUILD_TYPE=Release)" % (binary, build), 2)
    shown, binary = binary, os.path.abspath(binary)

    with Workdir("rocket-rides-enqueuer-bench") as d, contextlib.ExitStack() as stack:
        servers = LocalServers(d.file("servers"), fast=False, sentinel=True, log=say)
        stack.callback(servers.stop)
        servers.start()
        env = dict(os.environ, **servers.exports)
        # The direct rows and the wake-up below talk to the master through REDIS_URL.
        for name in ("REDIS_SENTINELS", "REDIS_SENTINEL_MASTER"):
            env.pop(name, None)
        env.update(ENQUEUER_QUEUE=QUEUE, SIDEKIQ_TIMESTAMPS="seconds")  # the latency below reads float seconds
        url, redis_url = servers.database_url, servers.redis_url

        def redis(*args):
            return run(["redis-cli", "-u", redis_url] + list(args), timeout=60).stdout.decode()

        def left():
            return int(psql_value(url, "SELECT count(*) FROM staged_jobs"))

        # As migrate: the tables, then the functions, whose bodies are checked only when called
        # (migrate's check_function_bodies = off: a function may call one whose file sorts later).
        for f in sorted(glob.glob("sql/*.sql")):
            psql(url, file=f)
        functions_env = dict(os.environ, PGOPTIONS="-c check_function_bodies=off")
        for f in sorted(glob.glob("sql/functions/*.sql")):
            psql(url, file=f, env=functions_env)

        def stage_rows():
            psql(url, "INSERT INTO staged_jobs (job_name, job_args) SELECT 'send_ride_receipt', "
                 "jsonb_build_array(g, 'ride_' || g, jsonb_build_object('amount', 1500)) "
                 "FROM generate_series(1, %d) g" % rows)
            psql(url, "VACUUM ANALYZE staged_jobs")

        def drain_once(log, **settings):
            started = time.monotonic_ns()
            if run_to_file([binary, "--once"], d.file(log), env=dict(env, **settings)) != 0:
                print_tail(d.file(log))
                raise BenchError("the enqueuer --once failed")
            return time.monotonic_ns() - started

        say("enqueuer benchmark: %d rows, durable commits, binary %s" % (rows, shown))
        for batch in batches:
            redis("DEL", "queue:" + QUEUE)
            stage_rows()
            e = drain_once("once.log", ENQUEUER_BATCH_SIZE=str(batch))
            pushed = int(redis("LLEN", "queue:" + QUEUE))
            remaining = left()
            if pushed != rows or remaining != 0:
                raise BenchError("drain incomplete: pushed=%d left=%d" % (pushed, remaining))

            stage_rows()
            with open(d.file("drain.sql"), "w") as f:
                f.write(sql_drain_script(rows, batch))
            started = time.monotonic_ns()
            psql(url, file=d.file("drain.sql"))
            s = time.monotonic_ns() - started
            remaining = left()
            if remaining != 0:
                raise BenchError("SQL drain incomplete: left=%d" % remaining)
            say("drain batch=%-5d enqueuer %.2fs (%.0f jobs/s)  pure SQL %.2fs (%.0f rows/s)  "
                "enqueuer/SQL time ratio %.2f"
                % (batch, e / 1e9, rows / (e / 1e9), s / 1e9, rows / (s / 1e9), e / s))

        # The cost of a replica-acknowledged push: WAIT 1 after each batch's LPUSH, in the same round trip.
        rate = {}
        for min_replicas in (0, 1):
            redis("DEL", "queue:" + QUEUE)
            stage_rows()
            e = drain_once("once-replicas.log", REDIS_MIN_REPLICAS=str(min_replicas))
            pushed = int(redis("LLEN", "queue:" + QUEUE))
            if pushed != rows:
                raise BenchError("drain with REDIS_MIN_REPLICAS=%d incomplete: %d" % (min_replicas, pushed))
            rate[min_replicas] = round(rows / (e / 1e9))
            say("drain batch=1000  REDIS_MIN_REPLICAS=%d  %d jobs/s (one replica attached)" % (min_replicas,
                                                                                             rate[min_replicas]))
        r = rate[1] / rate[0]
        say("%s  acknowledged push: REDIS_MIN_REPLICAS=1 %.0f jobs/s = %.2f x REDIS_MIN_REPLICAS=0 %.0f jobs/s "
            "(target >= 0.7)" % ("PASS" if r >= 0.7 else "FAIL", rate[1], r, rate[0]))

        # Wake-up latency: the daemon idles with a 60 s fallback poll, so only NOTIFY can deliver
        # quickly. Each insert is followed by the NOTIFY a stager's EnqueuerWakeup sends after its
        # commit (no trigger notifies since migration 007; the debounce itself is measured by
        # tests/jobs/enqueuer_wakeup_test.cpp). Latency per job = enqueued_at (set by the enqueuer)
        # - created_at (the staging transaction's start), both from this machine's clock; the
        # staging commit follows its start at once.
        redis("DEL", "queue:" + QUEUE)
        daemon = Process("daemon", [binary], dict(env, ENQUEUER_IDLE_SLEEP="60"), d.path, header="").start()
        stack.callback(daemon.stop)
        daemon.wait_ready(lambda: "listening for staged jobs" in daemon.log_text(), "listen for staged jobs", 10)
        with open(d.file("latency.sql"), "w") as f:
            f.write("INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', '[1]');\n"
                    "SELECT pg_notify('staged_jobs', '');\nSELECT pg_sleep(0.02);\n" * samples)
        psql(url, file=d.file("latency.sql"))
        for _ in range(100):
            if int(redis("LLEN", "queue:" + QUEUE)) == samples:
                break
            time.sleep(0.05)
        status = daemon.stop()
        if status != 0:
            raise BenchError("daemon exited %s after SIGTERM" % status)
        payloads = [json.loads(line) for line in redis("--raw", "LRANGE", "queue:" + QUEUE, "0", "-1").splitlines()
                    if line]
        latency = sorted(round((p["enqueued_at"] - p["created_at"]) * 1000) for p in payloads)
        if not latency:
            raise BenchError("no job reached Redis (daemon log: %s)" % read(daemon.log_path)[-500:])

        def pick(q):
            return latency[min(len(latency) - 1, int(q * len(latency)))]
        say("wake-up latency over %d jobs: p50 %d ms  p99 %d ms  max %d ms  (a %d ms poll would average %d ms)" % (
            len(latency), pick(0.50), pick(0.99), latency[-1], 60000, 30000))
        say("daemon stopped cleanly on SIGTERM (exit 0)")
    return 0


def sql_drain_script(rows, batch):
    """The enqueuer's own transaction, minus Redis and the payloads: BEGIN, the same claim, the
    same DELETE ... = ANY(ids), COMMIT, one batch after another in one session."""
    one = ("BEGIN;\n"
           "WITH claimed AS (SELECT id, job_name, job_args::text AS args, jid,\n"
           "                        (extract(epoch FROM created_at) * 1000)::bigint AS created_ms\n"
           "                 FROM staged_jobs ORDER BY id LIMIT %d FOR UPDATE SKIP LOCKED)\n"
           "SELECT coalesce('{' || string_agg(id::text, ',') || '}', '{}') AS ids,\n"
           "       sum(length(job_name) + length(args) + length(jid) + created_ms %% 2) AS bytes\n"
           "FROM claimed \\gset\n"
           "DELETE FROM staged_jobs WHERE id = ANY(:'ids'::bigint[]);\n"
           "COMMIT;\n") % batch
    return one * ((rows + batch - 1) // batch + 1)
