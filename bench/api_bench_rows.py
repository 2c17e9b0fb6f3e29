"""bench/api_bench.sh's rows file and the arithmetic its verdicts share (bench/verdicts.py).

The figures stay the strings the runs wrote, so that a verdict line prints them as measured; the
comparisons read them as awk did when the verdicts were shell: a figure that is not a number
makes its verdict FAIL, a missing one prints as nothing.
"""
import re

NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def num(text):
    """The number at the start of text, 0 without one (a string's value in awk)."""
    m = NUMBER.match(text or "")
    return float(m.group(0)) if m else 0.0


def ratio(a, b, fmt="%.3f"):
    """a / b formatted, or "" unless both are numbers and b > 0."""
    if re.fullmatch(r"-?[0-9.]+", a or "") and re.fullmatch(r"[0-9.]+", b or "") and num(b) > 0:
        return fmt % (num(a) / num(b))
    return ""


def _operand(text):
    """A figure as an operand of a comparison: None where it is not one (empty, "-")."""
    text = text.strip()
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return float(text)
    if re.fullmatch(r"[+-]?[A-Za-z_]\w*", text):  # "nan": a name, which awk read as an unset 0
        return -0.0 if text.startswith("-") else 0.0
    return None


def verdict(what, test, *figures):
    """PASS or FAIL what, by test over the figures; FAIL where one of them is not a number."""
    operands = [_operand(f) for f in figures]
    passed = None not in operands and test(*operands)
    return ("PASS  " if passed else "FAIL  ") + what


def verdict_of(what, test, *figures):
    """verdict over figures a part allowed to fail may have left out: "not measured" then."""
    for f in figures:
        if not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", f or ""):
            return "FAIL  %s: not measured" % what
    return verdict(what, test, *figures)


def lower_median(pairs):
    """(key, value) of the median value (the lower one of an even count); ("", "") for none."""
    if not pairs:
        return "", ""
    ordered = sorted(pairs, key=lambda p: (num(p[1]), "%s %s" % p))
    return ordered[(len(ordered) + 1) // 2 - 1]


def median_pair(rows, label_a, label_b, rounds):
    """(round, "%.3f" ratio) of the alternating pair a / b with the median ratio, ("", "") for none.
    label_a and label_b hold %d for the round."""
    pairs = []
    for r in rounds:
        a, b = rows.field(label_a % r, 1), rows.field(label_b % r, 1)
        if num(b) > 0:
            pairs.append((str(r), "%.3f" % (num(a) / num(b))))
    return lower_median(pairs)


class Rows:
    """rows.tsv: a row a run, its figures by label, in the order of the runs."""

    COLUMNS = 17
    # CPU ticks per request: of PostgreSQL, of the APIs (nginx in its rows), of the load generator
    TICKS = {"pg": 14, "api": 15, "loadgen": 17}

    def __init__(self, path, clk):
        self.clk = clk
        self.rows = {}
        with open(path) as rows:
            for line in rows:
                label, _, figures = line.rstrip("\n").partition("\t")
                values = figures.split()
                self.rows[label] = values + [""] * (self.COLUMNS - len(values))

    def items(self):
        return self.rows.items()

    def field(self, label, column):
        """The figure in column (1-based: rps p50 p99 2xx 409 5xx other, cores 8-13, ticks pg 14
        api 15, the APIs' context switches 16, ticks of the load generator 17), "" without it."""
        row = self.rows.get(label)
        return row[column - 1] if row else ""

    def us_per_request(self, label, who):
        """CPU microseconds of who (pg, api, loadgen) per answered request (per pgbench transaction)."""
        answered = num(self.field(label, 4))
        if answered <= 0:
            return ""
        return "%.0f" % (num(self.field(label, self.TICKS[who])) * 1e6 / self.clk / answered)

    def switches_per_request(self, label):
        """The APIs' context switches (all threads) per answered request."""
        answered = num(self.field(label, 4))
        return "%.2f" % (num(self.field(label, 16)) / answered) if answered > 0 else ""

    def errors(self, labels):
        """non-2xx answers and socket errors over the runs."""
        return sum(int(num(self.field(label, c))) for label in labels for c in (5, 6, 7))

    @staticmethod
    def median_of_rounds(figure, rounds):
        """(round, figure) of the round whose figure(round) is the median; rounds without one left out."""
        return lower_median([(str(r), v) for r in rounds for v in [figure(r)] if v])

    def median_over(self, figure, rounds):
        """The median of figure(round) over the rounds, "" for none."""
        return self.median_of_rounds(figure, rounds)[1]

    lower_median = staticmethod(lower_median)
