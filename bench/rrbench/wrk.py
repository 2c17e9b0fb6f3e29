"""wrk's output, read once for every bench: the BENCH_RESULT line bench/api_bench/common.lua
prints (rate, latencies and statuses as the bench counts them), and the figures of wrk's own
summary with --latency (its 99% line, the requests, the non-2xx answers)."""

import re


def bench_result(text):
    """{name: value} of the last BENCH_RESULT line, {} without one."""
    lines = [line for line in text.splitlines() if line.startswith("BENCH_RESULT")]
    if not lines:
        return {}
    return dict(kv.split("=", 1) for kv in lines[-1].split()[1:] if "=" in kv)


def result_line(text):
    lines = [line for line in text.splitlines() if line.startswith("BENCH_RESULT")]
    return lines[-1] if lines else ""


def p99(text):
    """The 99% latency of wrk --latency as it prints it ("12.34ms"), "" without one."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "99%":
            return fields[1]
    return ""


def requests(text):
    match = re.search(r"^\s*(\d+) requests in", text, re.M)
    return match.group(1) if match else ""


def non_2xx(text):
    match = re.search(r"Non-2xx.*?(\d+)\s*$", text, re.M)
    return match.group(1) if match else "0"


def socket_errors(text):
    """wrk's "Socket errors: ..." line, stripped, "" without one."""
    for line in text.splitlines():
        if "Socket errors" in line:
            return line.strip()
    return ""
