#!/usr/bin/env python3
"""bench/api_bench.sh's table, verdicts and report, from the rows its runs wrote and its counts.

    python3 bench/verdicts.py ROWS FIGURES

ROWS (rows.tsv): "label<TAB>rps p50 p99 2xx 409 5xx other  pg api mock loadgen proxies other-cpu
(cores)  pg-ticks api-ticks api-switches loadgen-ticks", one measured run a line (written by
bench/rrbench/measure.py). FIGURES: "name<TAB>value" lines, the counts the driver made (round trips,
memory, the pool, the data check...). Prints the markdown report; the verdicts print figures and
ratios only. Standard library only: it runs on Debian's python3.
"""
import re
import sys
import time

from api_bench_rows import Rows, lower_median, median_pair, num, ratio, verdict, verdict_of

# The article's floor: the seed article's minimum SQL on its schema, paired with the API's new keys.
ARTICLE = "pgbench article minimum SQL"
HOT_TABLES = ("idempotency_keys", "rides", "audit_records", "staged_jobs")


def table(rows, clk):
    """The table of every run, with the ratios each row is compared by."""
    base, paired, minimum, nginx, rate, article = {}, {}, {}, {}, {}, {}
    for label, v in rows.items():
        rate[label] = v[0]
        if re.match(r"^pgbench new-key SQL [0-9]+$", label):
            base[label.split(" ")[-1]] = v[0]
        if label.startswith("pgbench new-key SQL 32 #"):
            paired[label.split("#")[-1]] = v[0]
        if label.startswith("pgbench minimum SQL 32 #"):
            minimum[label.split("#")[-1]] = v[0]
        if label.startswith(ARTICLE + " "):
            article[label[len(ARTICLE) + 1:]] = v[0]  # "32 #r"
        if re.match(r"^nginx same replay bytes [0-9]+$", label):
            nginx[label.split(" ")[-1]] = v[0]
    lines = [
        "| run | req/s (tps) | p50 ms | p99 ms | 2xx | non-2xx 409 / 5xx / other "
        "| CPU cores pg / api / mock / loadgen / pgbouncer+haproxy / other | CPU us per request pg / api "
        "| API / pgbench | API / minimum SQL or nginx | API / article minimum | PgBouncer / direct |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]

    def over(a, against, key):  # "%.2f" of a / against[key], or "" without a positive figure there
        b = num(against.get(key, ""))
        return "%.2f" % (num(a) / b) if b > 0 else ""

    for label, v in rows.items():
        against_pgbench = least = floor = pooled = ""
        if re.match(r"^API (new keys|mixed) [0-9]+$", label):
            against_pgbench = over(v[0], base, label.split(" ")[-1])
        if label.startswith("API new keys 32 #"):
            pair = label.split("#")[-1]
            against_pgbench = over(v[0], paired, pair)
            least = over(v[0], minimum, pair)
        if re.match(r"^API new keys [0-9]+ #", label):
            floor = over(v[0], article, label[len("API new keys "):])
        if re.match(r"^API replay [0-9]+$", label):
            least = over(v[0], nginx, label.split(" ")[-1])
        if " via PgBouncer #" in label:
            pooled = over(v[0], rate, label.replace(" via PgBouncer #", " direct #", 1))
        answered = num(v[3])
        cpu = "- / -"
        if answered > 0:
            cpu = "%.0f / %.0f" % (num(v[13]) * 1e6 / clk / answered, num(v[14]) * 1e6 / clk / answered)
        lines.append(
            "| %s | %.0f | %s | %s | %d | %d / %d / %d | %s | %s | %s | %s | %s | %s |"
            % (label, num(v[0]), v[1], v[2], int(num(v[3])), int(num(v[4])), int(num(v[5])), int(num(v[6])),
               " / ".join(v[7:13]), cpu, against_pgbench, least, floor, pooled))
    return lines


def side_by_side_targets(rows, f):
    """The verdicts that compare the API with a baseline run beside it, and its costs per request."""
    n = f["rounds"]
    rounds = range(1, int(n) + 1)
    field, us = rows.field, rows.us_per_request
    out = []

    # The pair (pgbench run, then API run) with the median ratio; its figures go in the verdict.
    pair_round, pair_ratio = median_pair(rows, "API new keys 32 #%d", "pgbench new-key SQL 32 #%d", rounds)
    new32, pg32 = field(f"API new keys 32 #{pair_round}", 1), field(f"pgbench new-key SQL 32 #{pair_round}", 1)
    out.append(verdict(f"new keys at 32: {new32} req/s >= 0.8 x pgbench {pg32} tps (ratio {pair_ratio}, "
                       f"the median of {n} alternating pairs)", lambda a, b: a >= 0.8 * b, new32, pg32))

    min_round, min_ratio = rows.median_of_rounds(
        lambda r: ratio(field(f"API new keys 32 #{r}", 1), field(f"pgbench minimum SQL 32 #{r}", 1)), rounds)
    min_new, min_tps = field(f"API new keys 32 #{min_round}", 1), field(f"pgbench minimum SQL 32 #{min_round}", 1)
    out.append(verdict_of(f"new keys at 32: {min_new} req/s >= 0.85 x pgbench minimum SQL {min_tps} tps "
                          f"(ratio {min_ratio or '?'}, the median of {n} alternating pairs; "
                          f"to the product's own SQL: {pair_ratio})", lambda a, b: a >= 0.85 * b, min_new, min_tps))

    pg_round, pg_ratio = rows.median_of_rounds(
        lambda r: ratio(us(f"API new keys 32 #{r}", "pg"), us(f"pgbench minimum SQL 32 #{r}", "pg")), rounds)
    out.append(verdict_of(f"PostgreSQL CPU per new key at 32: {us(f'API new keys 32 #{pg_round}', 'pg')} us <= 1.1 x "
                          f"{us(f'pgbench minimum SQL 32 #{pg_round}', 'pg')} us per minimum SQL transaction pair "
                          f"(ratio {pg_ratio or '?'}, the median of {n} alternating pairs)", lambda a: a <= 1.1, pg_ratio))

    out += floor_targets(rows, f)
    out.append(verdict_of(f"round trips per replay from the database: {f['rt_replay'] or '?'} <= 1 (counted by PgBouncer "
                          f"over {f['rt_replays_sent'] or '0'} replays)", lambda a: a <= 1, f["rt_replay"]))

    for c in (32, 128):
        labels = [f"API new keys {c}"] + [f"API new keys {c} #{r}" for r in rounds]
        tails = [t for t in (ratio(field(label, 3), field(label, 2), "%.2f") for label in labels) if t]
        tail_median = lower_median([("run", t) for t in tails])[1]
        out.append(verdict_of(f"new keys at {c}: p99 <= 3 x p50 (median p99/p50 {tail_median or '?'} over the runs: "
                              f"{', '.join(tails)})", lambda a: a <= 3, tail_median))

    # Replays against nginx answering the same bytes: ROUNDS pairs at 32, and the single runs.
    replay_ratios = [(str(r), x) for r in rounds
                     for x in [ratio(field(f"API replay 32 #{r}", 1), field(f"nginx same replay bytes 32 #{r}", 1))] if x]
    replay_round, replay_ratio = lower_median(replay_ratios)
    api32, nginx32 = field(f"API replay 32 #{replay_round}", 1), field(f"nginx same replay bytes 32 #{replay_round}", 1)
    pairs = " / ".join("%.2f" % float(x) for _, x in replay_ratios)
    single = ", ".join(f"at {c}: " + ratio(field(f"API replay {c}", 1), field(f"nginx same replay bytes {c}", 1), "%.2f")
                       for c in (8, 32, 128))
    out.append(verdict_of(f"replays at 32: {api32} req/s >= 0.75 x nginx answering the same bytes {nginx32} "
                          f"(ratio {replay_ratio or '?'}, the median of {n} alternating pairs: {pairs}; single runs {single})",
                          lambda a, b: a >= 0.75 * b, api32, nginx32))
    return out


def hot_share(figure):
    """(updates, HOT updates, "%.2f" HOT share or "") from an "updates hot-updates" figure."""
    parts = (figure or "").split()
    if len(parts) != 2:
        return "", "", ""
    return parts[0], parts[1], ratio(parts[1], parts[0], "%.2f")


def floor_targets(rows, f):
    """The article's floor: the API's new keys against the article-schema minimum SQL in the same rounds, at 32
    and 128 (rate, PostgreSQL's CPU, the API's CPU against pgbench's own client, each the median of
    the rounds), the HOT share of the updates, and round trips and commits per new key."""
    n = f["rounds"]
    rounds = range(1, int(n) + 1)
    field, us = rows.field, rows.us_per_request
    out = []

    for c, least in ((32, 0.85), (128, 1.5)):
        api, art = f"API new keys {c} #%s", f"{ARTICLE} {c} #%s"

        def per_round(a_who, b_who, column=None):
            """The rounds' ratios a / b, "%.2f", joined by " / " (the figure who, or column for the rate)."""
            def one(r):
                if column:
                    return ratio(field(api % r, column), field(art % r, column), "%.2f")
                return ratio(us(api % r, a_who), us(art % r, b_who), "%.2f")
            return " / ".join(x for x in map(one, rounds) if x) or "-"

        rate_round, rate_ratio = median_pair(rows, api.replace("%s", "%d"), art.replace("%s", "%d"), rounds)
        new, floor = field(api % rate_round, 1), field(art % rate_round, 1)
        out.append(verdict_of(f"new keys at {c}: {new or '?'} req/s >= {least} x the article-schema minimum SQL "
                              f"{floor or '?'} pairs/s (ratio {rate_ratio or '?'}, the median of {n} alternating pairs: "
                              f"{per_round(None, None, 1)})", lambda a, b, t=least: a >= t * b, new, floor))

        pg_round, pg_ratio = rows.median_of_rounds(lambda r: ratio(us(api % r, "pg"), us(art % r, "pg")), rounds)
        out.append(verdict_of(f"PostgreSQL CPU per new key at {c}: {us(api % pg_round, 'pg') or '?'} us <= 1.2 x "
                              f"{us(art % pg_round, 'pg') or '?'} us per article-schema minimum pair (ratio "
                              f"{pg_ratio or '?'}, the median of {n} alternating pairs: {per_round('pg', 'pg')})",
                              lambda a: a <= 1.2, pg_ratio))

        # Replaces an absolute 150 us bound, which moved with the machine: pgbench's own client
        # (a lean libpq client doing the article's round trips) in the same rounds says how fast
        # this one was.
        cpu_round, cpu_ratio = rows.median_of_rounds(lambda r: ratio(us(api % r, "api"), us(art % r, "loadgen")),
                                                     rounds)
        product = ""
        if c == 32:
            product = (f"; pgbench's client per pair of the product's minimum SQL: {f['min_client32'] or '?'} us, "
                       f"API / that {ratio(f['api_cpu32'], f['min_client32'], '%.2f') or '?'}")
        out.append(verdict_of(f"API CPU per new key at {c}: {us(api % cpu_round, 'api') or '?'} us <= 1.0 x pgbench's "
                              f"own client {us(art % cpu_round, 'loadgen') or '?'} us per article-schema minimum pair "
                              f"(ratio {cpu_ratio or '?'}, the median of {n} alternating pairs: "
                              f"{per_round('api', 'loadgen')}{product})", lambda a: a <= 1.0, cpu_ratio))

    for table in ("idempotency_keys", "rides"):
        updates, hot, share = hot_share(f[f"hot_api_{table}"])
        a_updates, a_hot, a_share = hot_share(f[f"hot_article_{table}"])
        out.append(verdict_of(f"HOT updates on {table} over the API's new-key runs at 32 and 128: {hot or '?'} of "
                              f"{updates or '?'} updates, {share or '?'} >= 0.9 (the article minimum's: {a_hot or '?'} of "
                              f"{a_updates or '?'}, {a_share or '-'})", lambda a: a >= 0.9, share))

    for c in (32, 128):
        suffix = "" if c == 32 else str(c)
        rt, xact, wake = f[f"rt_new_key{suffix}"], f[f"xact_new_key{suffix}"], f[f"rt_wakeup{suffix}"]
        commits = f[f"api_commits_per_key{suffix}"]
        also = ""
        if c == 32:
            also = (f"; over all the rounds at 32 and 128: {f['rounds_commits_per_key'] or '?'}; the article minimum: "
                    f"{f['article_statements'] or '?'} round trips and {f['article_commits'] or '?'} commits per pair")
        out.append(verdict_of(f"round trips per new key at {c}: {rt or '?'} <= 2 (counted by PgBouncer, through it: "
                              f"{xact or '?'} transactions per key, besides {wake or '?'} enqueuer wake-ups per key on "
                              f"the API's own connection); commits per new key at {c}: {commits or '?'} (pg_stat_database, "
                              f"the direct API; a coalesced batch's commit counts once{also})", lambda a: a <= 2, rt))
    return out


def hot_table(f):
    """The HOT share of the updates on each hot table, the API's new-key runs beside the article's."""
    lines = ["| HOT updates over the new-key runs at 32 and 128 | the API: updates | HOT | share "
             "| the article minimum: updates | HOT | share |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for table in HOT_TABLES:
        cells = hot_share(f[f"hot_api_{table}"]) + hot_share(f[f"hot_article_{table}"])
        lines.append(f"| {table} | " + " | ".join(x or "-" for x in cells) + " |")
    return lines


def absolute_targets(rows, f):
    """The verdicts on the API's own figures: errors, latency, rates, memory, the pooled topology."""
    n = f["rounds"]
    rounds = range(1, int(n) + 1)
    field = rows.field
    out = []

    s409, s5xx, p99 = field("API new keys 32", 5), field("API new keys 32", 6), field("API new keys 32", 3)
    out.append(verdict(f"new keys at 32: zero 409 and zero 5xx ({s409} / {s5xx})", lambda a, b: a + b == 0, s409, s5xx))
    out.append(verdict(f"new keys at 32: p99 {p99} ms < 50 ms (pgbench's own p99 for the same SQL at 32: "
                       f"{field('pgbench new-key SQL 32', 3)} ms)", lambda a: a < 50, p99))
    replay32 = field("API replay 32", 1)
    out.append(verdict(f"replays at 32: {replay32} req/s >= 20000", lambda a: a >= 20000, replay32))

    for kind in ("new keys", "mixed"):
        errors = rows.errors([f"API {kind} 128"] + [f"API {kind} 128 #{r}" for r in rounds])
        # The alternating pair (32 then 128) with the median ratio.
        pair_round, pair_ratio = median_pair(rows, f"API {kind} 128 #%d", f"API {kind} 32 #%d", rounds)
        r32, r128 = field(f"API {kind} 32 #{pair_round}", 1), field(f"API {kind} 128 #{pair_round}", 1)
        out.append(verdict(f"{kind} at 128: no errors ({errors} non-2xx or socket errors over {len(rounds) + 1} runs)",
                           lambda a: a == 0, str(errors)))
        out.append(verdict(f"{kind} at 128: {r128} req/s no more than 10% below the 32-connection {r32} "
                           f"(ratio {pair_ratio}, the median of {n} alternating pairs)", lambda a, b: a >= 0.9 * b, r128, r32))

    out.append(verdict(f"API RSS at 128 connections (after {f['memory_seconds']}s of mixed traffic): "
                       f"{int(num(f['rss_kib'])) // 1024} MiB < 64 MiB", lambda a: a < 65536, f["rss_kib"]))

    for c in (32, 128):
        # The alternating pair (direct, through PgBouncer) with the median ratio.
        pair_round, pair_ratio = median_pair(rows, f"API new keys {c} via PgBouncer #%d", f"API new keys {c} direct #%d",
                                             rounds)
        pooled = field(f"API new keys {c} via PgBouncer #{pair_round}", 1)
        direct = field(f"API new keys {c} direct #{pair_round}", 1)
        out.append(verdict(f"new keys at {c} through PgBouncer: {pooled} req/s >= 0.9 x direct {direct} "
                           f"(ratio {pair_ratio}, the median of {n} alternating pairs)",
                           lambda a, b: a >= 0.9 * b, pooled, direct))
    errors = rows.errors([f"API new keys {c} via PgBouncer #{r}" for c in (32, 128) for r in rounds])
    out.append(verdict(f"new keys through PgBouncer: no errors ({errors} non-2xx or socket errors over "
                       f"{2 * len(rounds)} runs)", lambda a: a == 0, str(errors)))

    s2xx, s409, s5xx, other = (field(f["haproxy_label"], column) for column in (4, 5, 6, 7))
    out.append(verdict(f"512 connections via HAProxy, 2 APIs, PgBouncer: no errors ({s2xx} 2xx; non-2xx 409 / 5xx / "
                       f"other+socket errors {s409} / {s5xx} / {other}; wrk: "
                       f"{f['haproxy_socket_errors'] or 'no socket errors'}; HAProxy took an API out "
                       f"{f['haproxy_downs']} times, both {f['haproxy_none']} times, and answered {f['haproxy_nosrv']} "
                       f"itself)", lambda ok, a, b, c: a + b + c == 0 and ok > 0, s2xx, s409, s5xx, other))
    out.append(verdict(f"512 connections via HAProxy: PostgreSQL client backends at most {f['pg_backends_max']} (max of "
                       f"{f['pg_backends_samples']} samples 0.5 s apart) <= the pool {f['pool_bound']} "
                       f"({f['pool_bound_text']}; max_db_connections {f['max_db_connections']})",
                       lambda most, bound, samples: most <= bound and samples > 0,
                       f["pg_backends_max"], f["pool_bound"], f["pg_backends_samples"]))
    return out


def cost_table(rows, f):
    """What a request costs at 32 connections, one row a kind of request ("-" where not measured)."""
    def d(name):
        return f.get(name) or "-"
    api_pg = f["api_pg32"] or "-"
    replay_cpu = rows.us_per_request("API replay 32", "api") or "-"
    replay_switches = rows.switches_per_request("API replay 32") or "-"
    return [
        "| per request | round trips | statements | commits | API (pgbench: its client) CPU us | API context switches | API allocations "
        "| API system calls | PostgreSQL CPU us |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| rocket-rides-api, new key | {d('rt_new_key')} | {d('api_per_key')} | {d('api_commits_per_key')} "
        f"| {d('api_cpu32')} | {d('api_switches32')} | {d('allocs_new_key')} | {d('syscalls_new_key')} | {api_pg} |",
        f"| pgbench minimum SQL, new key | {d('minimum_statements')} | {d('minimum_statements')} "
        f"| {d('minimum_commits')} | {d('min_client32')} | - | - | - | {d('min_pg32')} |",
        f"| pgbench article minimum SQL, new key | {d('article_statements')} | {d('article_statements')} "
        f"| {d('article_commits')} | {d('art_client32')} | - | - | - | {d('art_pg32')} |",
        f"| rocket-rides-api, replay from its memory | 0 | 0 | 0 | {replay_cpu} | {replay_switches} "
        f"| {d('allocs_replay')} | {d('syscalls_replay')} | |",
        f"| rocket-rides-api, replay not in its memory | {d('rt_replay')} | | {d('xact_replay')} | | | | | |",
    ]


def report(rows, f):
    n = f["rounds"]
    rounds = range(1, int(n) + 1)
    # Medians over the rounds at 32, shared by the verdicts and the cost table.
    for name, label, figure in (("api_cpu32", "API new keys 32", "api"), ("api_pg32", "API new keys 32", "pg"),
                                ("min_pg32", "pgbench minimum SQL 32", "pg"),
                                ("min_client32", "pgbench minimum SQL 32", "loadgen"),
                                ("art_pg32", f"{ARTICLE} 32", "pg"), ("art_client32", f"{ARTICLE} 32", "loadgen")):
        f[name] = rows.median_over(lambda r: rows.us_per_request(f"{label} #{r}", figure), rounds)
    f["api_switches32"] = rows.median_over(lambda r: rows.switches_per_request(f"API new keys 32 #{r}"), rounds)
    contended = "; ".join(label for label, v in rows.items() if num(v[12]) > 0.25)

    def mib(name):
        return int(num(f[name])) // 1024
    lines = [f"## bench/api_bench.sh, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {f['cores']} cores, "
             f"{f['duration']}s per run", ""]
    lines += table(rows, num(f["clk"]))
    lines += ["", 'CPU "other" is the rest of the machine (processes this run did not start) during the run.']
    if contended:
        lines.append(f"**Other processes used more than 0.25 cores during: {contended}. "
                     "Those rows are not a fair measurement.**")
    lines += [
        f"Statements per new key: API {f['api_per_key']} (through PgBouncer: {f['pgb_per_key']}, where each phase sets "
        f"its own statement bound: {f['sql_per_new_key_unprepared']} expected), pgbench script {f['sql_per_new_key']}.",
        f"API memory after {f['memory_seconds']}s of mixed traffic at 128: VmRSS {mib('rss_kib')} MiB, VmHWM "
        f"{mib('hwm_kib')} MiB (stand-in provider VmRSS {mib('mock_rss_kib')} MiB, it keeps every charge).",
        f"Data: {f['keys_201']} keys answered 201, each with its ride, charge and one receipt job: "
        + ("ok." if f["data_ok"] == "1" else "VIOLATED."),
        "",
        "What a request costs at 32 connections (round trips counted by PgBouncer, the API's through it; commits",
        "from pg_stat_database; CPU and the API's context switches (all its threads, voluntary and involuntary) from",
        f"/proc, the medians of {n} rounds; allocations (librocket-rides-alloc-counter.so) and system calls (perf,",
        "raw_syscalls:sys_enter, all threads) on an API of their own over 5 s at 32; the minimum SQL's round trips are its",
        "statements, each of which pgbench sends and waits for, the article minimum's commits are per pair over its",
        "rounds, its users lookup a transaction of its own; a replay's commits are PgBouncer's transactions, read only):",
        "",
    ]
    lines += cost_table(rows, f)
    lines += ["", "How many of the updates were HOT (n_tup_hot_upd / n_tup_upd, pg_stat_user_tables, read after",
              "STATS_SETTLE before the API's first new-key run at 32 and after the last round):", ""]
    lines += hot_table(f)
    lines += ["", "```"] + side_by_side_targets(rows, f) + absolute_targets(rows, f) + ["```"]
    return "\n".join(lines)


class Figures(dict):
    """The counts: one the driver could not make reads as empty."""

    def __missing__(self, name):
        return ""


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: verdicts.py ROWS FIGURES")
    with open(sys.argv[2]) as figures:
        f = Figures(line.rstrip("\n").split("\t", 1) for line in figures if "\t" in line)
    print(report(Rows(sys.argv[1], num(f["clk"])), f))


if __name__ == "__main__":
    main()
