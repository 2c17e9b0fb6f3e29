"""bench/reaper_bench.sh: reaps KEYS (default 1,000,000) expired idempotency keys with
`rocket-rides-reaper --once` while wrk drives POST /rides, and reports keys/s and the API's p99
during the reap beside its p99 under the same load without the reaper, in the same run, on a
durable (fsync on) throwaway PostgreSQL.

  bench/reaper_bench.sh [BUILD_DIR]     default build-bench (built RelWithDebInfo if missing)
  env: KEYS=1000000 BASELINE_SECONDS=15 CONNECTIONS=8 REAPER_BATCH_SIZE=1000 UNFINISHED_EVERY=1000"""

import contextlib
import os
import signal
import subprocess
import time

from . import wrk
from .base import BENCH, SCRIPTS, BenchError, Workdir, env_int, psql, psql_value, read, run_to_file, say
from rrsuite import daemons, provider
from rrsuite.local_servers import LocalServers
from rrsuite.paths import REPO
from rrsuite.process import Process

LUA = os.path.join(BENCH, "reaper_bench.lua")


def main(argv):
    os.chdir(REPO)
    build = os.path.abspath(argv[0] if argv else "build-bench")
    keys = env_int("KEYS", 1000000)
    baseline_seconds = env_int("BASELINE_SECONDS", 15)
    connections = env_int("CONNECTIONS", 8)
    batch = env_int("REAPER_BATCH_SIZE", 1000)
    unfinished_every = env_int("UNFINISHED_EVERY", 1000)

    bin_dir = os.path.join(build, "bin")
    if not all(os.access(os.path.join(bin_dir, b), os.X_OK) for b in ("rocket-rides-reaper", "rocket-rides-api")):
        if subprocess.run([os.path.join(SCRIPTS, "build.sh"), build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                           "-DROCKET_RIDES_TESTS=OFF"]).returncode != 0:
            raise BenchError("the build failed")
    api = daemons.binary(bin_dir, "rocket-rides-api")

    with Workdir("rocket-rides-bench") as d, contextlib.ExitStack() as stack:
        # Durable commits (not fast): deleting keys is measured as production would pay for it.
        servers = LocalServers(d.file("servers"), fast=False, log=say)
        stack.callback(servers.stop)
        servers.start()
        env = dict(os.environ, **servers.exports)
        url = servers.database_url
        daemons.migrate(api, env)
        token = daemons.create_user(api, env, "bench@rocketrides.example", "cus_bench")

        mock = provider.start(bin_dir, dict(env, STRIPE_API_KEY="sk_bench"), d.path, name="mock")
        stack.callback(mock.stop)
        api_process = daemons.start_api(api, dict(env, STRIPE_API_BASE=provider.base_url(mock),
                                                  STRIPE_API_KEY="sk_bench"), d.path, name="api")
        stack.callback(api_process.stop)
        api_url = "http://127.0.0.1:%d" % api_process.port

        say("inserting %d expired keys (one in %d unfinished)..." % (keys, unfinished_every))
        psql(url, stdin="""
INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, recovery_point,
                              response_code, response_body, user_id, created_at, last_run_at, locked_at)
SELECT 'expired-key-' || lpad(g::text, 12, '0'), 'POST',
       '{"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712}', '/rides',
       CASE WHEN g %% %(every)d = 0 THEN 'ride_created' ELSE 'finished' END,
       CASE WHEN g %% %(every)d = 0 THEN NULL ELSE 201 END,
       CASE WHEN g %% %(every)d = 0 THEN NULL ELSE '{"id":1}' END,
       (SELECT id FROM users LIMIT 1), now() - interval '4 days', now() - interval '4 days', NULL
FROM generate_series(1, %(keys)d) g;
VACUUM ANALYZE idempotency_keys;
CHECKPOINT;
""" % {"every": unfinished_every, "keys": keys})

        def wrk_argv(seconds):
            return ["wrk", "-t2", "-c%d" % connections, "-d%ds" % seconds, "--latency", "-s", LUA, api_url]

        def wrk_env(name):
            return dict(os.environ, BENCH_RUN=name, BENCH_TOKEN=token)

        say("baseline: %ds of POST /rides without the reaper..." % baseline_seconds)
        run_to_file(wrk_argv(baseline_seconds), d.file("wrk-baseline.txt"), env=wrk_env("baseline"))

        say("reaping while the same load runs...")
        load = Process("wrk-reaping", wrk_argv(3600), wrk_env("reaping"), d.path, header="").start()
        stack.callback(load.stop)
        time.sleep(2)  # let the load settle before the reaper starts
        started = time.monotonic()
        run_to_file([os.path.join(bin_dir, "rocket-rides-reaper"), "--once"], d.file("reaper.log"),
                    env=dict(env, DATABASE_URL=url, REAPER_BATCH_SIZE=str(batch)))
        seconds = time.monotonic() - started
        load.proc.send_signal(signal.SIGINT)  # wrk prints its statistics on SIGINT
        load.proc.wait(timeout=60)

        left = int(psql_value(url, "SELECT count(*) FROM idempotency_keys WHERE idempotency_key LIKE 'expired-key-%'"))
        archived = int(psql_value(url, "SELECT count(*) FROM idempotency_keys_archive"))
        passes = read(d.file("reaper.log")).count('msg="reaper pass"')
        baseline, reaping = read(d.file("wrk-baseline.txt")), read(load.log_path)

        say("\nreaper: %d keys in %.1f s = %.0f keys/s (%d batches of %d, %d archived, %d expired keys left)" % (
            keys, seconds, keys / seconds, passes, batch, archived, left))
        say("API POST /rides p99 without the reaper: %s (%s requests, %s non-2xx)" % (
            wrk.p99(baseline), wrk.requests(baseline), wrk.non_2xx(baseline)))
        say("API POST /rides p99 while reaping:      %s (%s requests, %s non-2xx)" % (
            wrk.p99(reaping), wrk.requests(reaping), wrk.non_2xx(reaping)))
    return 0
