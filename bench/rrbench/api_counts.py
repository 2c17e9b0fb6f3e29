"""What a request costs besides time, counted by someone other than the API where possible:
statements (pg_stat_statements), commits and HOT updates (pg_stat_database, pg_stat_user_tables),
round trips (PgBouncer's SHOW STATS), PostgreSQL's client backends behind the pool, HAProxy's view
of the APIs, and allocations and system calls (an API preloaded with the allocation counter, perf).
A count that cannot be read leaves its figure empty, which the verdicts show as "not measured".

PostgreSQL 15 reports an idle backend's counts when it goes idle, at most once a second and
otherwise 10 s later: the API's pool stays connected, so its last second of commits shows up only
then; the snapshots wait STATS_SETTLE first."""

import os
import re
import subprocess
import threading
import time

from .base import BenchError, LUA_DIR, psql, psql_value, read, say, warn
from .api_servers import REQUEST_BODY

HOT_TABLES = ("idempotency_keys", "rides", "audit_records", "staged_jobs")
TAG = "/* api_bench */ "
WAKEUP_STATEMENTS = ("SELECT * FROM pg_notify($1, $2)", "SET LOCAL statement_timeout = 5000")


def ratio(a, b, fmt="%.3f"):
    """a / b formatted, "" unless both are known and b > 0."""
    if a is None or b is None or b <= 0:
        return ""
    return fmt % (a / b)


def quiet(fn, *args):
    """fn(*args), or None when a count cannot be read (psql failed)."""
    try:
        return fn(*args)
    except (BenchError, ValueError, IndexError):
        return None


def commits_of(url):
    return int(psql_value(url, TAG + "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"))


def keys_answered(b):
    return int(b.sql_value(TAG + "SELECT count(*) FROM idempotency_keys WHERE response_code = 201"))


class Counts:
    def __init__(self, bench, measure):
        self.b, self.m = bench, measure
        self.snapshots = {}
        self.statement_check_failed = False

    # --- statements per new key, counted by PostgreSQL while one API serves new keys: reset right
    # before the run, read right after it, so that they hold that API's statements only (pgbench
    # uses a database of its own, the other APIs are idle, the bench's own statements say api_bench).
    def statements_reset(self):
        self.b.sql(TAG + "SELECT pg_stat_statements_reset()")
        self.created0 = keys_answered(self.b)

    def statements_read(self, name, what, expected=None):
        """Prints the statements per new key and the check against the script; returns per key."""
        b = self.b
        script = float(b.figures["sql_per_new_key"])
        expected = float(expected if expected is not None else b.figures["sql_per_new_key"])
        time.sleep(1)  # requests in flight when wrk stopped finish
        created1 = keys_answered(b)
        out = b.sql(TAG + "SELECT calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) FROM pg_stat_statements s "
                    "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() "
                    "AND query NOT LIKE '%/* api_bench */%' ORDER BY calls DESC", )
        rows = []
        for line in out.splitlines():
            calls, _, query = line.partition("|")
            rows.append((int(calls), query))
        with open(b.file("statements-%s.tsv" % name), "w") as f:
            f.write("".join("%d\t%s\n" % r for r in rows))
        # The enqueuer wake-ups are not the request's SQL (see wakeup_notifies): counted apart.
        wakeups = sum(c for c, q in rows if q in WAKEUP_STATEMENTS)
        statements = sum(c for c, _ in rows) - wakeups
        created = created1 - self.created0
        # Coalesced phases: one call of a batch form runs the phase of several keys. For the check,
        # every key whose phase did not run in a call of the single form counts one statement, as
        # if it had run alone: the SQL per request is the same, only shared.
        for batch, single in (("rides_create_with_keys", "rides_create_with_key"),
                              ("rides_record_charges_and_finish", "rides_record_charge_and_finish")):
            batch_calls = sum(c for c, q in rows if batch + "(" in q)
            single_calls = sum(c for c, q in rows if single + "(" in q)
            if batch_calls <= 0:
                continue
            batched = created - single_calls
            say("coalesced %s, %s: %d batch calls for %d keys (%.1f keys a batch)" % (
                single, what, batch_calls, batched, batched / batch_calls))
            # A call is `expected / the script's` statements here (2 through PgBouncer: its SET LOCAL).
            statements = int(statements + (batched - batch_calls) * expected / script)
        per_key = "%.3f" % (statements / created) if created > 0 else "nan"
        say("\nstatements per new key, %s: %s (%d statements / %d keys answered 201, besides %d of the enqueuer "
            "wake-up), expected %s (the pgbench script: %s)" % (what, per_key, statements, created, wakeups,
                                                               _fmt(expected), b.figures["sql_per_new_key"]))
        if per_key == "nan" or abs(float(per_key) - expected) > 0.02 * expected:
            self.statement_check_failed = True
            warn("!!! STATEMENT COUNT MISMATCH: %s runs %s statements per new key, expected %s from the product's "
                 "calls: the pgbench baseline is not the request's SQL. Statements seen (calls, query):" % (
                     what, per_key, _fmt(expected)))
            warn("\n".join("%d\t%s" % r for r in rows[:20]))
        say("  per new key: calls / keys, query")
        if created > 0:
            for calls, query in rows[:12]:
                say("  %6.3f  %s" % (calls / created, query))
        say()
        return per_key

    # --- what PostgreSQL counted in a database, read between the runs after STATS_SETTLE: its
    # commits, the keys answered 201 so far, and the updates and HOT updates of each hot table.
    def db_counts(self, url):
        names = ",".join("'%s'" % t for t in HOT_TABLES)
        out = psql(url, TAG + "SELECT 'commits', xact_commit FROM pg_stat_database WHERE datname = current_database() "
                   "UNION ALL SELECT 'keys_201', count(*) FROM idempotency_keys WHERE response_code = 201 "
                   "UNION ALL SELECT t.name || '.' || c.kind, coalesce(sum(CASE c.kind WHEN 'upd' THEN s.n_tup_upd "
                   "ELSE s.n_tup_hot_upd END), 0) FROM unnest(ARRAY[%s]) t(name) CROSS JOIN (VALUES ('upd'), ('hot')) "
                   "c(kind) LEFT JOIN pg_stat_user_tables s ON s.relname = t.name GROUP BY t.name, c.kind" % names)
        return {k: int(v) for k, v in (line.split("|") for line in out.splitlines())}

    def stats_snapshot(self, name):
        """Waits STATS_SETTLE, then keeps db_counts of the API's database and the article's."""
        time.sleep(self.b.stats_settle)
        self.snapshots[(name, "api")] = quiet(self.db_counts, self.b.database_url)
        if self.b.article_ok:
            self.snapshots[(name, "article")] = quiet(self.db_counts, self.b.article_url)

    def delta(self, a, b, db, name):
        """What name grew by between two snapshots of db, None without both."""
        x, y = self.snapshots.get((a, db)), self.snapshots.get((b, db))
        if not x or not y or name not in x or name not in y:
            return None
        return y[name] - x[name]

    def commits_per_key(self, a, b, db):
        return ratio(self.delta(a, b, db, "commits"), self.delta(a, b, db, "keys_201"), "%.2f")

    def api_commits_read(self, connections, a, b):
        """The API's commits per new key at 32 or 128 from its single run."""
        per_key = self.commits_per_key(a, b, "api")
        self.b.figures["api_commits_per_key" + ("" if connections == 32 else str(connections))] = per_key
        say("commits per new key at %d, the API straight to PostgreSQL: %s (%s commits in pg_stat_database / %s keys "
            "answered 201)\n" % (connections, per_key or "not measured", _str(self.delta(a, b, "api", "commits")),
                                 _str(self.delta(a, b, "api", "keys_201"))))

    def hot_read(self, all_from, rounds_from, to):
        """The HOT shares over the API's new-key runs at 32 and 128 (and the article's), and the
        commits per new key over the rounds."""
        b = self.b
        say("HOT updates (n_tup_hot_upd / n_tup_upd in pg_stat_user_tables) over the new-key runs at 32 and 128:")
        for db in ("api", "article"):
            line = ""
            for t in HOT_TABLES:
                upd = self.delta(all_from, to, db, t + ".upd")
                hot = self.delta(all_from, to, db, t + ".hot")
                if upd is not None and hot is not None:
                    b.figures["hot_%s_%s" % (db, t)] = "%d %d" % (upd, hot)
                line += " %s %s/%s" % (t, "?" if hot is None else hot, "?" if upd is None else upd)
            say(("  the API's new keys:" if db == "api" else "  the article minimum SQL:") + line)
        b.figures["rounds_commits_per_key"] = self.commits_per_key(rounds_from, to, "api")
        b.figures["article_commits"] = self.commits_per_key(rounds_from, to, "article")
        say("  commits per new key over the rounds: the API %s, the article minimum %s per pair (its users lookup is a "
            "transaction of its own)\n" % (b.figures["rounds_commits_per_key"] or "not measured",
                                           b.figures["article_commits"] or "not measured"))

    # --- the minimum SQL's commits per request, around its first round's run (pgbench's backends
    # report at exit, so a second is enough to settle)
    def minimum_counts_begin(self):
        time.sleep(1)
        self.minimum_commits0 = quiet(commits_of, self.b.pgbench_url)
        return self.minimum_commits0 is not None

    def minimum_counts_end(self, label):
        b = self.b
        if getattr(self, "minimum_commits0", None) is None:
            return False
        time.sleep(1)
        commits1 = quiet(commits_of, b.pgbench_url)
        if commits1 is None:
            return False
        done = None
        for line in read(self.m.rows).splitlines():
            row_label, _, rest = line.partition("\t")
            if row_label == label:
                done = int(rest.split()[3])
        commits = commits1 - self.minimum_commits0
        b.figures["minimum_commits"] = ratio(commits, done, "%.2f")
        say("  pgbench minimum SQL per request: %s statements (round trips) in the script, %s commits (%d commits in "
            "pg_stat_database / %s transactions)" % (b.figures.get("minimum_statements") or "?",
                                                    b.figures["minimum_commits"] or "?", commits, _str(done)))
        return True

    # --- database round trips, counted by PgBouncer: SHOW STATS counts a "query" from a client's
    # first message until PostgreSQL's ReadyForQuery, i.e. one round trip, and a transaction per
    # server transaction, whatever the API thinks it sends. The pooled APIs' readiness pings go
    # through PgBouncer too: their rate, measured idle, is taken off.
    def pgbouncer_counts(self):
        """(queries, transactions) of database rocket_rides so far."""
        out = subprocess.run(["psql", "-X", "-A", "-F", "|", "-h", "127.0.0.1", "-p", str(self.b.pgbouncer_port), "-U",
                              "postgres", "-d", "pgbouncer", "-c", "SHOW STATS"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=60).stdout.decode().splitlines()
        if not out:
            raise BenchError("no SHOW STATS")
        col = {name: i for i, name in enumerate(out[0].split("|"))}
        for line in out[1:]:
            v = line.split("|")
            if v[0] == "rocket_rides":
                return int(v[col["total_query_count"]]), int(v[col["total_xact_count"]])
        raise BenchError("no rocket_rides in SHOW STATS")

    def rt_idle(self):
        """PgBouncer's queries and transactions per second while no request is sent."""
        time.sleep(2)  # the warm-ups' requests still in flight when wrk stopped finish first
        t0 = time.time()
        q0, x0 = self.pgbouncer_counts()
        time.sleep(5)
        q1, x1 = self.pgbouncer_counts()
        t1 = time.time()
        self.idle_rate, self.idle_xact = (q1 - q0) / (t1 - t0), (x1 - x0) / (t1 - t0)
        say("PgBouncer while idle: %.2f round trips and %.2f transactions a second (readiness pings)" % (
            self.idle_rate, self.idle_xact))

    def idle_during(self, rate, t0, t1):
        return round(float("%.2f" % rate) * (t1 - t0)) if rate is not None else 0

    def wakeup_notifies(self):
        """NOTIFYs run in the API's database so far: the enqueuer wake-ups (a debounced NOTIFY on the
        API's own background connection, not in any request's path) go through PgBouncer too."""
        return int(self.b.sql_value(TAG + "SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s "
                                    "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() "
                                    "AND s.query = 'SELECT * FROM pg_notify($1, $2)'"))

    def max_key_id(self):
        return int(self.b.sql_value(TAG + "SELECT coalesce(max(id), 0) FROM idempotency_keys"))

    def rt_new_begin(self, connections):
        self.rt = {"t0": time.time(), "w0": self.wakeup_notifies(), "k0": keys_answered(self.b)}
        self.rt["q0"], self.rt["x0"] = self.pgbouncer_counts()
        if connections == 32:
            self.rt_id0 = self.max_key_id()

    def rt_new_end(self, connections):
        """Round trips, transactions and wake-ups per new key around one run through PgBouncer."""
        b, rt = self.b, self.rt
        suffix = "" if connections == 32 else str(connections)
        time.sleep(1)
        q1, x1 = self.pgbouncer_counts()
        t1 = time.time()
        wakeups = self.wakeup_notifies() - rt["w0"]
        keys = keys_answered(b) - rt["k0"]
        if connections == 32:
            self.rt_id1 = self.max_key_id()
        rt_new = ratio(q1 - rt["q0"] - self.idle_during(getattr(self, "idle_rate", None), rt["t0"], t1) - wakeups, keys,
                       "%.2f")
        wake = ratio(wakeups, keys, "%.3f")
        xact = ratio(x1 - rt["x0"] - self.idle_during(getattr(self, "idle_xact", None), rt["t0"], t1) - wakeups, keys,
                     "%.2f")
        b.figures["rt_new_key" + suffix], b.figures["rt_wakeup" + suffix] = rt_new, wake
        b.figures["xact_new_key" + suffix] = xact
        say("round trips per new key at %d: %s (PgBouncer: %d queries, less the idle rate and %d enqueuer wake-ups, / "
            "%d keys answered 201; transactions per new key: %s; wake-ups per new key, on the API's own connection: %s)"
            "\n" % (connections, rt_new or "not measured", q1 - rt["q0"], wakeups, keys, xact or "?", wake or "?"))

    def rt_replays(self, replay_db_keys):
        """Replays that are not in the API's memory: keys the first pooled API finished in that run,
        each replayed once to the second pooled API, which has never seen them, so every answer
        comes from the database."""
        b = self.b
        time.sleep(2)  # the last run's requests still in flight when wrk stopped finish first
        keys_path = b.file("replay-db-keys.txt")
        with open(keys_path, "w") as f:
            f.write(b.sql(TAG + "SELECT idempotency_key FROM idempotency_keys WHERE id > %d AND id <= %d AND "
                          "response_code = 201 ORDER BY id LIMIT %d" % (self.rt_id0, self.rt_id1, replay_db_keys)))
        if os.path.getsize(keys_path) == 0:
            warn("  %s: no finished keys to replay" % b.name)
            return False
        # One request first, outside the count: the token's user may have left the API's cache
        # (TOKEN_CACHE_TTL) since its warm-up.
        second = "http://127.0.0.1:%d" % b.pooled_apis[1].port
        status = b.post_rides(second, b.replay_key, b.file("replay-db-first"))
        if status != "201":
            warn("  %s: the second pooled API answered %s to a replay" % (b.name, status))
            return False
        t0 = time.time()
        q0, x0 = self.pgbouncer_counts()
        out = subprocess.run(["python3", os.path.join(LUA_DIR, "replay_each.py"), "127.0.0.1",
                              str(b.pooled_apis[1].port), b.token, REQUEST_BODY, keys_path], stdout=subprocess.PIPE,
                             check=True).stdout.decode()
        q1, x1 = self.pgbouncer_counts()
        t1 = time.time()
        fields = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
        sent, created = int(fields.get("sent", 0)), int(fields.get("s201", 0))
        b.figures["rt_replays_sent"] = str(sent)
        b.figures["rt_replay"] = ratio(q1 - q0 - self.idle_during(self.idle_rate, t0, t1), created, "%.2f")
        b.figures["xact_replay"] = ratio(x1 - x0 - self.idle_during(self.idle_xact, t0, t1), created, "%.2f")
        say("round trips per replay from the database: %s (PgBouncer: %d queries, less the idle rate, / %d replays "
            "answered 201 of %d sent, %s other, first other: %s; transactions per replay: %s; %.0f replays/s, one at "
            "a time)\n" % (b.figures["rt_replay"] or "not measured", q1 - q0, created, sent, fields.get("other", ""),
                           fields.get("first_other", ""), b.figures["xact_replay"] or "?", sent / (t1 - t0)))
        return True

    # --- PostgreSQL's client backends in the API's database, sampled every 0.5 s during the
    # HAProxy run (the sampler's own session left out), against the pool's bound. Started as the
    # run's before_load, after measure's CHECKPOINT, whose session would otherwise count.
    def start_sampler(self):
        self.sampling = threading.Event()
        self.samples = []

        def sample():
            while not self.sampling.is_set():
                value = psql(self.b.database_url, TAG + "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                             "current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
                             check=False)
                if value and value.strip().isdigit():
                    self.samples.append(int(value.strip()))
                self.sampling.wait(0.5)
        self.sampler = threading.Thread(target=sample, daemon=True)
        self.sampler.start()

    def sampler_read(self):
        """Stops the sampler; the most backends seen, the samples, and the pool's bound: every client
        here uses one database and one role, so PgBouncer has one pool, which never holds more than
        default_pool_size + reserve_pool_size server connections; max_db_connections (the cap
        across all pools of the database) is looser, unless set lower."""
        b = self.b
        self.sampling.set()
        self.sampler.join(timeout=30)
        b.figures["pg_backends_max"] = str(max(self.samples, default=0))
        b.figures["pg_backends_samples"] = str(len(self.samples))
        bound = b.pool_size + b.reserve_pool_size
        text = "default_pool_size %d + reserve_pool_size %d" % (b.pool_size, b.reserve_pool_size)
        if 0 < b.max_db_connections < bound:
            bound, text = b.max_db_connections, "max_db_connections %d" % b.max_db_connections
        b.figures.update(pool_bound=str(bound), pool_bound_text=text, max_db_connections=str(b.max_db_connections))

    def haproxy_counts(self):
        """What HAProxy saw, from its log once it has stopped: an API taken out of rotation (and why),
        both out, requests it answered itself because no API was UP ("<NOSRV>"). Its state changes
        appear twice in the log (stderr and the log line): the "[WARNING]" ones are counted."""
        b = self.b
        lines = read(b.haproxy.log_path).splitlines()
        downs = [line for line in lines if re.match(r"^\[WARNING\].* is DOWN", line)]
        b.figures["haproxy_downs"] = str(len(downs))
        none = [line for line in lines if re.match(r"^\[ALERT\].*has no server available", line)]
        b.figures["haproxy_none"] = str(len(none))
        b.figures["haproxy_nosrv"] = str(sum(1 for line in lines if "<NOSRV>" in line))
        if downs:
            reason = re.sub(r", check duration.*", "", re.sub(r".*reason: ", "", downs[0]))
            say("  HAProxy took an API out %d times (first: %s), both at once %s times, and answered %s requests "
                "itself with no API UP; its first state changes:" % (len(downs), reason, b.figures["haproxy_none"],
                                                               b.figures["haproxy_nosrv"]))
            changes = [line for line in lines if re.match(r"^\[WARNING\].* is (DOWN|UP)", line)][:8]
            for line in changes:
                say(re.sub(r", check duration.*", "", re.sub(r"^\[WARNING\] *\([0-9]*\) : ", "    ", line)))


def _fmt(x):
    return "%g" % x


def _str(x):
    return "" if x is None else str(x)
