#!/usr/bin/env python3
"""The table and the verdicts of bench/in_flight_bench.sh, from its rows (bench/rrbench/measure.py's
format) and its state counts: every run, then per round the ratios that compare two settings or
the API and the article's minimum SQL run side by side, their medians, and the cold state beside
the steady one. ARTICLE_DB is the state of the article's database in each of its runs (fresh or
grown, bench/in_flight_bench.sh), named in the table and the ratios against it.

  bench/in_flight_verdicts.py ROWS STATE ROUNDS CLK ARTICLE_DB"""

import statistics
import sys


def read_rows(path):
    rows = {}
    with open(path) as f:
        for line in f:
            label, _, rest = line.rstrip("\n").partition("\t")
            v = rest.split()
            rows[label] = {
                "rps": float(v[0]), "p50": v[1], "p99": v[2], "ok": int(v[3]),
                "pg_ticks": int(v[13]), "api_ticks": int(v[14]),
            }
    return rows


def read_state(path):
    state = {}
    with open(path) as f:
        for line in f:
            label, keys, figures = line.rstrip("\n").split("\t")
            values = dict(item.split("=") for item in figures.split())
            state[label] = {"keys": int(keys), **{k: int(x) for k, x in values.items()}}
    return state


def per_key(row, ticks, clk):
    return row[ticks] * 1e6 / clk / row["ok"] if row["ok"] else float("nan")


def main():
    rows, state = read_rows(sys.argv[1]), read_state(sys.argv[2])
    rounds, clk, article_db = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    article_state = {"fresh": "fresh database", "grown": "grown database"}[article_db]
    out = ["article minimum SQL runs: %s" % {
        "fresh": "each on a fresh database (dropped and loaded again from bench/article_schema.sql before it)",
        "grown": "on one database grown through all the rounds (each run starts where the last one left it)"}[article_db],
        ""]
    out.append("| run | rate/s | p50 ms | p99 ms | PG us per key | API us per key | commits per key "
               "| seq tuples read per key | index scans per key | WAL B per key | FPI per key "
               "| MultiXacts per key | members per MultiXact "
               "| pages per 1000 keys | WAL segments + | autovacuum/analyze | checkpoints |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, row in rows.items():
        s = state.get(label)
        shown = label + (" (%s)" % article_state if label.startswith("article minimum SQL") else "")
        cells = [shown, "%.0f" % row["rps"], row["p50"], row["p99"],
                 "%.0f" % per_key(row, "pg_ticks", clk), "%.0f" % per_key(row, "api_ticks", clk)]
        if s and s["keys"]:
            n = s["keys"]
            cells += ["%.2f" % (s["commits"] / n), "%.1f" % (s["seq_tup_read"] / n), "%.1f" % (s["idx_scan"] / n),
                      "%.0f" % (s["wal_bytes"] / n), "%.3f" % (s["wal_fpi"] / n),
                      "%.3f" % (s["multixacts"] / n),
                      "%.1f" % (s["mx_members"] / s["multixacts"]) if s["multixacts"] else "-",
                      "%.1f" % (s["pages"] * 1000 / n),
                      str(s["wal_files"]), str(s["maintenance"]), str(s["checkpoints"])]
        else:
            cells += [""] * 11
        out.append("| " + " | ".join(cells) + " |")

    def rate(label):
        row = rows.get(label)
        return row["rps"] if row else None

    def median_ratio(name, numerator, denominator):
        ratios = []
        for r in range(1, rounds + 1):
            a, b = rate(numerator % r), rate(denominator % r)
            if a and b:
                ratios.append(a / b)
        if not ratios:
            return name, None, []
        return name, statistics.median(ratios), ratios

    checks = [
        (median_ratio("two in flight / article minimum (%s), 32" % article_state, "API new keys 32 two in flight #%d",
                      "article minimum SQL 32 #%d"), 1.2),
        (median_ratio("two in flight / article minimum (%s), 128" % article_state, "API new keys 128 two in flight #%d",
                      "article minimum SQL 128 #%d"), None),
        (median_ratio("one in flight / article minimum (%s), 32" % article_state, "API new keys 32 one in flight #%d",
                      "article minimum SQL 32 #%d"), None),
        (median_ratio("two in flight / one in flight, 32", "API new keys 32 two in flight #%d",
                      "API new keys 32 one in flight #%d"), None),
        (median_ratio("two in flight / one in flight, 128", "API new keys 128 two in flight #%d",
                      "API new keys 128 one in flight #%d"), 0.95),
    ]
    out.append("")
    out.append("| ratio (median of the rounds) | value | each round | target | verdict |")
    out.append("| --- | ---: | --- | ---: | --- |")
    for (name, value, ratios), target in checks:
        shown = "%.3f" % value if value is not None else "not measured"
        each = ", ".join("%.3f" % r for r in ratios)
        if target is None:
            verdict, target_text = "", ""
        else:
            target_text = ">= %.2f" % target
            verdict = "not measured" if value is None else ("PASS" if value >= target else "FAIL")
        out.append("| %s | %s | %s | %s | %s |" % (name, shown, each, target_text, verdict))

    for setting in ("one", "two"):
        commits = [state[l]["commits"] / state[l]["keys"] for l in state
                   if (" %s in flight #" % setting) in l and state[l]["keys"]]
        if commits:
            out.append("")
            out.append("commits per new key, %s in flight: %s" % (setting, ", ".join("%.2f" % c for c in commits)))

    cold, steady = "cold API new keys 32 (2 in flight)", "steady API new keys 32 (2 in flight)"
    if cold in rows and steady in rows:
        c, s = rows[cold], rows[steady]
        out.append("")
        out.append("cold / steady at 32 (two in flight): rate %.3f, PostgreSQL CPU per key %.3f" % (
            c["rps"] / s["rps"], per_key(c, "pg_ticks", clk) / per_key(s, "pg_ticks", clk)))
    print("\n".join(out))


if __name__ == "__main__":
    main()
