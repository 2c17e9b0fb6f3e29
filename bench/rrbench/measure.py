"""One measured run of a load generator (wrk or pgbench) and its row in rows.tsv, the file
bench/verdicts.py and bench/in_flight_verdicts.py read:

  label<TAB>rps p50 p99 2xx 409 5xx other  pg api mock loadgen proxies other-cpu (cores)
            pg-ticks api-ticks api-switches loadgen-ticks

(ticks are CPU clock ticks of PostgreSQL, of the APIs and of the load generator over the run, for
CPU per request; api-switches the APIs' context switches, all threads).

The pgbench scripts are generated from the product's calls (rocket-rides-bench-sql): the product
sends each phase as one call, "SELECT * FROM fn(...)", with the default settings a statement its
session prepared once, so pgbench replays them with -M prepared, as the API sends them
(product_protocol); where the sessions do not carry the bound it is the simple query "SET LOCAL
statement_timeout = N; SELECT * FROM fn('...')", replayed with -M simple. The minimum SQL runs -M
prepared, the cheapest way PostgreSQL offers; so does the article's, in its own database."""

import glob
import os
import re
import subprocess

from . import cpu, wrk
from .base import ARTICLE_SQL, MINIMUM_SQL, BenchError, read, say, warn
from rrsuite.process import print_tail

LUA_REL = "bench/api_bench"  # the drivers run from the repository, as the scripts expect


class Measure:
    def __init__(self, bench):
        self.b = bench
        self.run_index = 0
        self.before_load = None  # runs after the checkpoint, just before the load starts
        self.rows = bench.file("rows.tsv")
        open(self.rows, "w").close()
        self.window = cpu.Window(bench.postmaster_pid, self.api_pids, lambda: [p.proc.pid for p in bench.proxies],
                                 lambda: bench.mock.proc.pid)
        self.api_override = None  # the pids of the "api" column when not the APIs' (nginx's rows)

    def api_pids(self):
        if self.api_override is not None:
            return self.api_override
        return [p.proc.pid for p in self.b.apis]

    # --- the pgbench scripts, generated from the product's calls
    def pgbench_scripts(self):
        b = self.b
        bench_sql = os.path.join(b.bin, "rocket-rides-bench-sql")

        def output(*args):
            return subprocess.run([bench_sql] + list(args), stdout=subprocess.PIPE, check=True).stdout.decode()
        with open(b.file("new_key.sql"), "w") as f:
            f.write(output("new-key"))
        with open(b.file("replay.sql"), "w") as f:
            f.write(output("replay"))
        b.figures["sql_per_new_key"] = output("count", "new-key").strip()
        # The pooled APIs (DATABASE_PREPARED_STATEMENTS=off) send each phase with its SET LOCAL.
        b.figures["sql_per_new_key_unprepared"] = output("count", "new-key", "unprepared").strip()
        self.product_pgoptions = output("pgoptions").strip()
        self.product_protocol = output("protocol").strip()
        self.defines = []
        for line in output("defines").splitlines():
            self.defines += ["-D", line]
        self.defines += ["-D", "user_id=%s" % b.pgbench_user, "-D", "lock_token=6f1c2b9e-8a4d-4c3b-9e2f-5d7a1b0c3e4f"]

        # The minimum SQL, on the same database and schema as the new-key SQL. One request first,
        # so that a script the schema refuses is found here, once, not in every round.
        b.minimum_ok = self._check(["pgbench", "-n", "-M", "prepared", "-c", "1", "-t", "1", "-f", MINIMUM_SQL]
                                   + self.defines + [b.pgbench_url], "minimum-check.out")
        if not b.minimum_ok:
            warn("%s: bench/minimum_sql.sql fails on the product's schema; the pgbench minimum SQL rows are left out:"
                 % b.name)
            print_tail(b.file("minimum-check.out"), 5)
        # The same for the article's minimum SQL on the article's schema (the floor the product's
        # schema is measured against).
        if b.article_ok and not self._check(["pgbench", "-n", "-M", "prepared", "-c", "1", "-t", "1", "-f", ARTICLE_SQL,
                                             b.article_url], "article-check.out"):
            b.article_ok = False
            warn("%s: bench/article_minimum_sql.sql fails on bench/article_schema.sql; the article minimum SQL rows "
                 "are left out:" % b.name)
            print_tail(b.file("article-check.out"), 5)

    def _check(self, argv, out):
        with open(self.b.file(out), "wb") as f:
            return subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT).returncode == 0

    # --- one measured run
    def measure(self, label, kind, argv, env, soft=False):
        """Runs the load generator, writes the row and prints it; True, or False for a failed run
        with soft=True (it says so, and no row is written); a failed run otherwise ends the bench."""
        b = self.b
        self.run_index += 1
        out = b.file("run-%d.out" % self.run_index)
        b.sql("/* api_bench */ CHECKPOINT")  # every run starts without a checkpoint's backlog
        if self.before_load:
            self.before_load()
        self.window.begin()
        with open(out, "wb") as f:
            child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
            try:
                # wait4: the load generator's own CPU, which /proc no longer has once it is reaped.
                _, status, usage = os.wait4(child.pid, 0)
                child.returncode = os.waitstatus_to_exitcode(status)
            except BaseException:
                child.kill()
                child.wait()
                raise
        gen = round((usage.ru_utime + usage.ru_stime) * cpu.CLK)
        w = self.window.end(gen)

        def failed(what):
            if soft:
                warn("  %s: %s: %s; this row is left out and the bench goes on" % (b.name, label, what))
                return False
            raise BenchError("%s: %s" % (label, what))
        if child.returncode != 0:
            print_tail(out)
            return failed("the load generator failed (its output above)")
        text = read(out)
        if kind == "wrk":
            if not wrk.result_line(text):
                warn(text)
                return failed("no result line (the load generator's output above)")
            v = wrk.bench_result(text)
            other = _awk_number(v.get("sother")) + _awk_number(v.get("socket_errors"))
            other = "%d" % other if other == int(other) else "%g" % other
            stats = " ".join([v.get("rps", ""), v.get("p50_ms", ""), v.get("p99_ms", ""), v.get("s2xx", ""),
                              v.get("s409", ""), v.get("s5xx", ""), other])
        else:
            stats = pgbench_stats(text, b.file("pgbench-log-%d" % self.run_index))
        with open(self.rows, "a") as f:
            f.write("%s\t%s %s %d %d %d %d\n" % (label, stats, w.cores, w.pg, w.api, w.switches, gen))
        # CPU per request (per pgbench transaction, one whole request, for pgbench): ticks / answers.
        n = _awk_number(stats.split()[3])
        per_request = "%.0f/%.0f" % (w.pg * 1e6 / cpu.CLK / n, w.api * 1e6 / cpu.CLK / n) if n > 0 else "-/-"
        say("  %-36s %s | cores pg/api/mock/loadgen/proxies/other %s | CPU us per request pg/api %s" % (
            label, stats, w.cores, per_request))
        return True

    def pgbench_run(self, label, script, clients, protocol=None, soft=False):
        """The product's scripts run as the API sends them (product_protocol) in sessions set up as
        the API's pooled ones are (product_pgoptions); the minimum SQL (protocol given) in plain ones."""
        pgoptions = ""
        if not protocol:
            protocol, pgoptions = self.product_protocol, self.product_pgoptions
        b = self.b
        argv = (["pgbench", "-n", "-M", protocol, "-c", str(clients), "-j", "2", "-T", str(b.duration), "-f", script]
                + self.defines + ["-l", "--log-prefix=%s" % b.file("pgbench-log-%d" % (self.run_index + 1)),
                                  b.pgbench_url])
        return self.measure(label, "pgbench", argv, dict(os.environ, PGOPTIONS=pgoptions), soft)

    def article_run(self, label, clients, soft=False):
        """The article's minimum SQL as the article wrote it: its own database, -M prepared, plain
        sessions, no variables given (it sets its own)."""
        b = self.b
        argv = ["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", "2", "-T", str(b.duration), "-f",
                ARTICLE_SQL, "-l", "--log-prefix=%s" % b.file("pgbench-log-%d" % (self.run_index + 1)), b.article_url]
        return self.measure(label, "pgbench", argv, dict(os.environ, PGOPTIONS=""), soft)

    def wrk_run(self, label, lua, connections, seconds=None, url=None, options=(), soft=False):
        b = self.b
        env = dict(os.environ, BENCH_TOKEN=b.token, BENCH_RUN="r%d-%s" % (self.run_index + 1, os.urandom(4).hex()),
                   BENCH_REPLAY_KEY=b.replay_key or "")
        argv = (["wrk", "-t2", "-c%d" % connections, "-d%ss" % (seconds or b.duration), "--latency"] + list(options)
                + ["-s", "%s/%s" % (LUA_REL, lua), url or b.api_url])
        return self.measure(label, "wrk", argv, env, soft)


def _awk_number(text):
    """A string's value as awk reads it: its leading number, 0 without one."""
    m = re.match(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text or "")
    return float(m.group(0)) if m else 0.0


def pgbench_stats(text, log_prefix):
    """"rps p50 p99 2xx 409 5xx other" from pgbench's summary and its per-transaction logs."""
    tps = re.search(r"^tps = (\S+)", text, re.M)
    done = re.search(r"number of transactions actually processed: (\S+)", text)
    failed = re.search(r"number of failed transactions: (\S+)", text)
    latencies = []
    for path in glob.glob(log_prefix + ".*"):
        for line in read(path).splitlines():
            fields = line.split()
            if len(fields) >= 3 and fields[2].isdigit():
                latencies.append(int(fields[2]) / 1000)
        os.remove(path)
    latencies.sort()
    if latencies:
        i50, i99 = max(1, int(len(latencies) * 0.50)), max(1, int(len(latencies) * 0.99))
        p50, p99 = "%.3f" % latencies[i50 - 1], "%.3f" % latencies[i99 - 1]
    else:
        p50 = p99 = "-"
    return "%.1f %s %s %s 0 0 %s" % (_awk_number(tps.group(1) if tps else ""), p50, p99,
                                     done.group(1).split("/")[0] if done else "", failed.group(1) if failed else "0")


def script_statements(path):
    """A pgbench script's statements, each one round trip (None if it pipelines)."""
    n, pipeline = 0, False
    for line in read(path).splitlines():
        stripped = line.strip()
        if stripped.startswith("--"):
            continue
        if stripped.startswith("\\"):
            if "pipeline" in stripped.split()[0]:
                pipeline = True
            continue
        if re.search(r";\s*$", line) or "\\gset" in line:
            n += 1
    return None if pipeline or n == 0 else n

