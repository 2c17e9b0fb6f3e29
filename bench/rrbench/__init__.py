"""rrbench: the benches' orchestration in one language, Python 3's standard library only (Debian's
/usr/bin/python3), the same as the suites' tools/rrsuite, which starts every server a bench runs
against. Each bench/NAME.sh is a two-line wrapper that runs `bench/rrbench/run.py NAME`, so that
the command names, arguments and environment variables stay what docs/performance.md,
docs/testing.md and docs/bench-results quote.

Why a package here and not modules in tools/rrsuite: rrsuite starts servers for every suite; what
is here measures (CPU from /proc, PostgreSQL's and PgBouncer's counters, wrk's and pgbench's
output, the order of the runs) and only the benches need it. Why one package rather than loose
files under bench/lib: the drivers import the shared parts by one name, and bench/lib's bash went
away whole. The load generators stay what they are: wrk and its Lua scripts (bench/api_bench/,
bench/reaper_bench.lua), pgbench and its SQL, the C++ helpers (bench/pgbench_script.cpp,
bench/api_bench/alloc_counter.cpp).

  run.py           the entry point: `run.py NAME ARGS...` runs NAME's main(ARGS)
  base.py          paths (the article's floor SQL, read from bench/ only), the work directory,
                   signals (SIGINT/SIGTERM end a run through its cleanup), psql, timing, wrk runs
  cpu.py           CPU of processes from /proc: PostgreSQL with its backends, the APIs, the rest
  pgstats.py       PostgreSQL's counters: commits, HOT updates, WAL, MultiXacts, statements
  measure.py       one measured run (wrk or pgbench) and its row in rows.tsv
  api_servers.py   the API benches' servers: PostgreSQL, Redis, the stand-in, the APIs,
                   PgBouncer, HAProxy, nginx, all through rrsuite
  api_counts.py    what a request costs besides time: statements, commits, round trips,
                   backends, HAProxy's view, allocations and system calls
  data_check.py    "a benchmark that loses data is not a result"
  soak.py, fuzz_long.py, reaper_bench.py, enqueuer_bench.py, migration_bench.py,
  restore_drill.py, ha_bench.py, api_bench.py, in_flight_bench.py
                   one driver per bench (its docstring is the bench's usage)
"""
