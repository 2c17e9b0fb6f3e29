"""The fault suite's command line: its options, the profile's defaults, the replay line, the signal
handling, and which run a profile gets (the restore drill, the HA run inside its own network
namespace, or the Suite); the exit code is the run's (0 pass, 1 a finding, 2 the harness failed)."""

import argparse
import os
import random
import signal
import sys
import traceback

from . import restore_drill
from .base import REPO, SCRIPT, HarnessError, Stop, log
from .netns import run_in_netns
from .profiles import PROFILES
from .suite import Suite


DESCRIPTION = "Proof under fire: a fault-injection suite that checks exactly-once with numbers."


def parse_args(argv):
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="short")
    parser.add_argument("--duration", type=float, help="seconds of traffic under faults")
    parser.add_argument("--clients", type=int, help="concurrent clients")
    parser.add_argument("--fault-rate", type=float, help="faults per minute after one of each kind")
    parser.add_argument("--seed", type=int, help="random seed (printed; pass it again to replay a run)")
    parser.add_argument("--bin-dir", default=os.path.join(REPO, "build", "bin"))
    fast = parser.add_mutually_exclusive_group()
    fast.add_argument("--fast", dest="fast", action="store_true", default=None,
                      help="PostgreSQL without fsync (default for the short profile)")
    fast.add_argument("--durable", dest="fast", action="store_false", help="PostgreSQL with durable commits")
    parser.add_argument("--keep", action="store_true", help="keep the logs directory even when the run passes")
    parser.add_argument("--plant-violations", action="store_true",
                        help="checker self-test: after quiescing, break each invariant once; passes only if "
                             "the checker reports every one")
    parser.add_argument("--self-test", action="store_true",
                        help="after the run's own verdict, plant what --plant-violations plants and check the "
                             "same records again; passes only if the run passes and every plant is named "
                             "(HA and restore profiles)")
    parser.add_argument("--allow-missing-daemons", action="store_true",
                        help="run without the enqueuer or the completer if they are not built")
    parser.add_argument("--async-replicas", action="store_true",
                        help="HA profiles: asynchronous replicas (scripts/cluster.sh start --ha --async), for the "
                             "record: the checker should then find what a failover loses")
    parser.add_argument("--inside-netns", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--netns-prefix", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    if args.duration is None:
        args.duration = profile["duration"]
    if args.clients is None:
        args.clients = profile["clients"]
    if args.fault_rate is None:
        args.fault_rate = profile["fault_rate"]
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 2 ** 31)
    if args.duration < 20 or args.clients < 1:
        parser.error("--duration must be at least 20 seconds and --clients at least 1")
    return args


def replayed_flags(args):
    """The switches a replay line repeats as given: they change what the run does, not its seed."""
    return "".join(flag for flag, given in ((" --async-replicas", args.async_replicas),
                                            (" --plant-violations", args.plant_violations),
                                            (" --self-test", args.self_test)) if given)


def main(argv):
    args = parse_args(argv)
    if PROFILES[args.profile].get("topology") == "restore":
        print("fault_suite profile=%s seed=%d bin_dir=%s" % (args.profile, args.seed, os.path.abspath(args.bin_dir)))
        print("replay with: %s --profile %s --seed %d --bin-dir %s%s" % (
            os.path.relpath(SCRIPT), args.profile, args.seed, os.path.abspath(args.bin_dir),
            replayed_flags(args)), flush=True)
        return restore_drill.run(args)
    if PROFILES[args.profile].get("topology") == "ha" and not args.inside_netns:
        if os.geteuid() != 0:
            print("fault_suite: the HA profiles make network namespaces and need root", file=sys.stderr)
            return 2
        return run_in_netns(args, argv)
    print("fault_suite profile=%s seed=%d duration=%.0f clients=%d fault_rate=%.1f bin_dir=%s" % (
        args.profile, args.seed, args.duration, args.clients, args.fault_rate, os.path.abspath(args.bin_dir)))
    print("replay with: %s --profile %s --seed %d --duration %g --clients %d --fault-rate %g --bin-dir %s%s" % (
        os.path.relpath(SCRIPT), args.profile, args.seed, args.duration, args.clients,
        args.fault_rate, os.path.abspath(args.bin_dir), replayed_flags(args)))
    sys.stdout.flush()

    def on_signal(signum, _frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Stop("signal %d" % signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    suite = Suite(args)
    code = 2
    try:
        code = suite.run()
    except Stop as e:
        log("stopped by %s; cleaning up" % e)
        code = 130
    except HarnessError as e:
        log("HARNESS ERROR: %s" % e)
        code = 2
    except Exception:
        log("HARNESS ERROR:\n" + traceback.format_exc())
        code = 2
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if suite.traffic is not None:
            suite.traffic.abort.set()
        if suite.hostile is not None:
            suite.hostile.abort.set()
        if suite.monitor is not None:
            suite.monitor.done.set()
        suite.cleanup(keep=args.keep or (code != 0 and not getattr(suite, "plants_caught", False)))
    return code
