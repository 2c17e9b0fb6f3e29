#!/usr/bin/python3
"""Runs one bench's driver: `bench/rrbench/run.py NAME ARGS...` imports rrbench.NAME and calls its
main(ARGS), with bench/ (for rrbench and the verdict scripts beside it) and tools/ (for rrsuite)
on sys.path. bench/NAME.sh execs this, so that the bench keeps its command name.

Exit statuses: the driver's; 130 after SIGINT and 143 after SIGTERM, once the cleanup has stopped
every server the run started; 1 with one line on stderr when the harness could not set itself up
(a server that did not start, a tool missing)."""

import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Running this file puts bench/rrbench first on sys.path: its modules must only be imported as
# rrbench.X, never as top-level modules of the same files.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools")]


def main():
    if len(sys.argv) < 2:
        print("usage: run.py BENCH [ARGS...]", file=sys.stderr)
        return 2
    name = sys.argv[1]
    from rrbench import base
    from rrsuite.process import HarnessError
    base.handle_signals()
    module = importlib.import_module("rrbench." + name)
    try:
        return module.main(sys.argv[2:]) or 0
    except KeyboardInterrupt:
        print("%s: interrupted" % name, file=sys.stderr)
        return 130
    except HarnessError as error:
        print("%s: %s" % (name, error), file=sys.stderr)
        return 1
    except base.BenchError as error:
        if str(error):
            print("%s: %s" % (name, error), file=sys.stderr)
        return error.status


if __name__ == "__main__":
    sys.exit(main())
