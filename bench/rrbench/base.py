"""What every bench driver shares: where things are (the repository, the Lua scripts, the floors'
SQL), the work directory a run keeps its servers' data and logs in, signals, psql, clocks and
the load generators run to a file.

The floors' SQL is named here once. The article's floor (bench/article_schema.sql and
bench/article_minimum_sql.sql, verbatim copies below their headers of the seed article's
../shared/perf/schema_example.sql and minimum_sql_example.sql, which other machines may not have)
is read from bench/ and from nowhere else; bench/minimum_sql.sql is the product's own floor (its
schema, not the article's)."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from rrsuite.paths import REPO

BENCH = os.path.join(REPO, "bench")
LUA_DIR = os.path.join(BENCH, "api_bench")
ARTICLE_SCHEMA = os.path.join(BENCH, "article_schema.sql")
ARTICLE_SQL = os.path.join(BENCH, "article_minimum_sql.sql")
MINIMUM_SQL = os.path.join(BENCH, "minimum_sql.sql")
RESULTS = os.path.join(BENCH, "results")
SCRIPTS = os.path.join(REPO, "scripts")


class BenchError(Exception):
    """A bench that ends with a message (or none, when it said why already) and an exit status."""

    def __init__(self, message="", status=1):
        super().__init__(message)
        self.status = status


def _terminated(signum, frame):
    # SystemExit unwinds through every `finally` and ExitStack, so SIGTERM stops the servers as an
    # exception would; SIGINT stays KeyboardInterrupt (Python's own), which does the same.
    raise SystemExit(128 + signum)


def handle_signals():
    # SIGINT explicitly too: a shell starts a background job with SIGINT ignored, and Python keeps
    # an ignored SIGINT ignored, which would leave `kill -INT` with no effect on a bench run so.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGHUP, _terminated)


def say(*parts):
    print(*parts, flush=True)


def warn(*parts):
    print(*parts, file=sys.stderr, flush=True)


def env_number(name, default, kind=float, what="a number"):
    """The setting `name` from the environment (default when unset or empty) as `kind`; exit 2 with
    one line when it is not one."""
    value = os.environ.get(name) or str(default)
    try:
        return kind(value)
    except ValueError:
        raise BenchError("%s must be %s, not %r" % (name, what, value), 2)


def env_int(name, default):
    return env_number(name, default, int, "a whole number")


def env_float(name, default):
    return env_number(name, default)


def now():
    """Wall-clock seconds (the rates divide by these; time.monotonic where only a span matters)."""
    return time.time()


def require_tools(name, *tools):
    for tool in tools:
        if shutil.which(tool) is None:
            raise BenchError("%s is not installed" % tool)


class Workdir:
    """A temporary directory for a run's servers, logs and files, readable by the postgres user
    (the servers run as postgres when we are root), removed at the end. keep_logs_on_failure: the
    logs (not the data) are copied elsewhere first when the run fails, and the copy is named."""

    def __init__(self, prefix, keep_logs_on_failure=None):
        self.path = tempfile.mkdtemp(prefix=prefix + ".", dir="/tmp")
        os.chmod(self.path, 0o755)
        self.keep = keep_logs_on_failure

    def __str__(self):
        return self.path

    def file(self, *names):
        return os.path.join(self.path, *names)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        failed = kind is not None and not (kind is SystemExit and value.code in (0, None))
        if failed and self.keep:
            logs = tempfile.mkdtemp(prefix=self.keep + "-logs.", dir="/tmp")
            for name in os.listdir(self.path):
                if name.endswith((".log", ".out")):
                    shutil.copy(self.file(name), logs)
            server_log = self.file("servers", "pg", "server.log")
            if os.path.exists(server_log):
                shutil.copy(server_log, logs)
            status = value.code if kind is SystemExit else 130 if kind is KeyboardInterrupt else 1
            warn("%s: failed (exit %s); logs kept in %s" % (self.keep, status, logs))
        shutil.rmtree(self.path, ignore_errors=True)
        return False


def psql(url, sql=None, *options, file=None, stdin=None, check=True, timeout=3600, env=None):
    """psql -X -q -At with ON_ERROR_STOP on url: -c SQL, or -f FILE, or the script on stdin. Its
    output as text; a failure raises BenchError with psql's message unless check=False (then None)."""
    argv = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", url] + list(options)
    if sql is not None:
        argv += ["-c", sql]
    if file is not None:
        argv += ["-f", file]
    result = subprocess.run(argv, input=(stdin or "").encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=timeout, env=env)
    if result.returncode != 0:
        if not check:
            return None
        raise BenchError("psql failed: %s" % result.stderr.decode(errors="replace").strip()[-2000:])
    return result.stdout.decode(errors="replace")


def psql_value(url, sql, **kw):
    """The first line of a one-value query (None if psql failed and check=False)."""
    out = psql(url, sql, **kw)
    return None if out is None else (out.strip().splitlines() or [""])[0]


def run_to_file(argv, path, env=None, cwd=None, timeout=None, append=False):
    """Runs a command with stdout and stderr in `path`; its exit status. subprocess.run kills the
    child if we are interrupted, so no load generator outlives the run."""
    with open(path, "ab" if append else "wb") as out:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                              timeout=timeout).returncode


def read(path, default=""):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def rrsuite_env():
    """The environment with tools/ on PYTHONPATH, for a child that runs `python3 -m rrsuite`."""
    tools = os.path.join(REPO, "tools")
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=tools + (":" + path if path else ""))


def cores():
    return os.cpu_count() or 1
