"""The package's command line, for suites not written in Python:

  python3 -m rrsuite up --shape plain|provider [--bin-dir DIR] [--log-dir DIR] [--stripe-key KEY]
                        [--api-env NAME=VALUE]... [--seed N] [--json]

(with tools/ on PYTHONPATH) starts the shape (plain: the API over a fresh database and the stand-in
provider; provider: the stand-in alone, with MOCK_SEED=N), prints one line describing it (JSON with
--json: provider_port, provider_url, log_dir, logs, and for plain origin, api_port, database_url,
api_binary, api_env),
and stays in the foreground until SIGTERM, SIGINT or the end of its stdin (its caller gone); then
stops it and prints one more line, {"stopped": true, "problems": [...]} (a process that did not
exit 0, a sanitizer report). Exits 0 once stopped, 2 if the shape could not start (one line on
stderr). DATABASE_URL names the cluster the plain shape makes its database in; the bin directory
defaults to ROCKET_RIDES_BIN_DIR.

  python3 -m rrsuite cluster COMMAND DIR ...

is scripts/cluster.sh, both shapes, its members, backups and restore (cluster_cli.py says which
commands),

  python3 -m rrsuite server KIND ...

one server (Redis, PgBouncer, HAProxy, the provider, an API, PostgreSQL) for the scripts in bash
(servers_cli.py),

  python3 -m rrsuite local-servers COMMAND DIR ...

scripts/local-servers.sh's commands (local_servers_cli.py; backups and restore in
local_servers_backup.py), and

  python3 -m rrsuite backup write-config|archive-command|patroni-restore-command|stanza-create ...

pgBackRest's configuration and commands for a script that sets up PostgreSQL itself (backup_cli.py:
the crashed-leader test)."""

import argparse
import json
import os
import signal
import sys
import tempfile

sys.dont_write_bytecode = True

from .plain import PlainStack, ProviderShape  # noqa: E402
from .process import HarnessError  # noqa: E402


class _Stop(BaseException):
    pass


def _raise_stop(signum, _frame):
    raise _Stop()


def up(args):
    api_env = {}
    for item in args.api_env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print("rrsuite: --api-env takes NAME=VALUE, not %r" % item, file=sys.stderr)
            return 2
        api_env[name] = value
    bin_dir = args.bin_dir or os.environ.get("ROCKET_RIDES_BIN_DIR", "")
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="rocket-rides-%s-" % args.shape)
    os.makedirs(log_dir, exist_ok=True)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _raise_stop)
    stack = None
    try:
        try:
            if args.shape == "provider":
                stack = ProviderShape(bin_dir, log_dir, args.stripe_key, args.seed)
            else:
                stack = PlainStack(bin_dir, os.environ.get("DATABASE_URL", ""), log_dir, args.stripe_key, api_env,
                                   db_prefix="rr_%s_" % args.label)
        except HarnessError as error:
            print("rrsuite: the %s shape did not start: %s" % (args.shape, error), file=sys.stderr)
            return 2
        description = stack.describe()
        if args.json:
            print(json.dumps(description), flush=True)
        else:
            print("%s shape up: %s, logs %s" % (args.shape, ", ".join(
                "%s %s" % (k, description[k]) for k in ("origin", "provider_url") if k in description), log_dir),
                flush=True)
        while sys.stdin.buffer.read(65536):
            pass
    except _Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if stack is not None:
            problems = stack.stop()
            line = json.dumps({"stopped": True, "problems": problems}) if args.json else (
                "stopped" + "".join("\n  " + p for p in problems))
            print(line, flush=True)
    return 0


def main(argv):
    if argv[:1] == ["cluster"]:
        from .cluster_cli import main as cluster_main
        return cluster_main(argv[1:])
    if argv[:1] == ["backup"]:
        from .backup_cli import main as backup_main
        return backup_main(argv[1:])
    if argv[:1] == ["local-servers"]:
        from .local_servers_cli import main as local_servers_main
        return local_servers_main(argv[1:])
    if argv[:1] == ["server"]:
        from .servers_cli import main as server_main
        return server_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python3 -m rrsuite")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("up", help="start a shape and keep it up until signalled")
    p.add_argument("--shape", choices=["plain", "provider"], default="plain")
    p.add_argument("--seed", type=int, help="the stand-in's MOCK_SEED (provider shape)")
    p.add_argument("--bin-dir")
    p.add_argument("--log-dir")
    p.add_argument("--stripe-key", default="sk_test_rrsuite")
    p.add_argument("--api-env", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--label", default="suite", help="names the database (rr_LABEL_...)")
    p.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return up(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
