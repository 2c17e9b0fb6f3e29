#!/usr/bin/env python3
"""The HA shape end to end (scripts/cluster.sh start --ha; docs/high-availability.md).

Starts the cluster (three etcd members, three Patroni nodes, HAProxy, PgBouncer, two of each
daemon), then checks: one leader and two streaming standbys, one of them synchronous; a POST
/rides through HAProxy gets 201; a switchover moves the leader and the API serves again; a kill -9
of the leader's postgres gives a new leader and the API serves again within FAILOVER_BOUND
seconds, with no daemon restarted, and a key sent before the failover replays its answer
(Idempotent-Replayed) after it; with Patroni stopped on every node there is no leader, each API's
/readyz says 503 and a POST to an API answers 503 with Retry-After (never 500), and Patroni
started again brings a leader and 201s back; `stop` leaves no process and no namespace behind.

As root (where `ip netns` works) it runs in a network namespace of its own, and the cluster with
--netns, so that each node is in a namespace of its own too; then it also kills the leader's
patroni (its postgres keeps running; started again, it rejoins) and, with --partition, partitions
the leader (a new leader serves; the row written meanwhile is still there once the old leader is
back). --partition is not in the test command only for time (about 35 s more).

  tests/ha/ha_test.py --bin-dir build/bin [--keep] [--partition] [--no-netns]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(REPO, "scripts", "cluster.sh")
sys.path.insert(0, os.path.join(REPO, "tools"))
from rrsuite.process import command_lines  # noqa: E402  (after the path it is found on)
# Seconds from a kill -9 of the leader's postgres to the first 2xx through HAProxy. The target is
# a median of 15 s (measured: about 6 s); a single run gets room for a loaded CI machine.
FAILOVER_BOUND = 25.0
RIDE = b"origin_lat=37.7749&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712"
APP_MEMBERS = ["api1", "api2", "enqueuer1", "enqueuer2", "completer1", "completer2", "reaper1", "reaper2"]


def log(message):
    print("[ha_test %s] %s" % (time.strftime("%H:%M:%S"), message), flush=True)


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Cluster:
    def __init__(self, directory, bin_dir, netns_prefix):
        self.dir = directory
        self.bin_dir = bin_dir
        self.netns_prefix = netns_prefix
        self.env = {}

    def run(self, *args, check_rc=True, timeout=180):
        result = subprocess.run([CLUSTER, args[0], self.dir] + list(args[1:]), capture_output=True, text=True,
                                timeout=timeout)
        if check_rc and result.returncode != 0:
            raise Failure("cluster.sh %s failed (exit %d): %s" % (" ".join(args), result.returncode,
                                                                  result.stderr[-2000:]))
        return result

    def start(self):
        args = ["start", "--ha", "--bin-dir", self.bin_dir]
        if self.netns_prefix:
            args += ["--netns", self.netns_prefix]
        out = self.run(*args, timeout=240).stdout
        for line in out.splitlines():
            if line.startswith("export "):
                name, _, value = line[len("export "):].partition("=")
                self.env[name] = value.strip("'")

    def leader(self):
        result = self.run("leader", check_rc=False)
        return result.stdout.strip() if result.returncode == 0 else None

    def status(self):
        return self.run("status").stdout

    def app_pids(self):
        pids = {}
        for name in APP_MEMBERS:
            with open(os.path.join(self.dir, "pids", name + ".pid")) as f:
                pids[name] = f.read().strip()
        return pids


def http(method, url, token=None, key=None, body=None, timeout=15):
    request = urllib.request.Request(url, data=body, method=method)
    if token:
        request.add_header("Authorization", "Bearer " + token)
    if key:
        request.add_header("Idempotency-Key", key)
    if body is not None:
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()
    except (urllib.error.URLError, OSError) as error:
        return 0, {}, str(error).encode()


def header(headers, name):
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


def post_ride(cluster, key, base=None):
    return http("POST", (base or cluster.env["API_URL"]) + "/rides", cluster.env["ROCKET_RIDES_TOKEN"], key, RIDE)


def new_key(tag):
    return "ha-test-%s-%d-%d" % (tag, os.getpid(), time.time_ns())


def seconds_to_first_2xx(cluster, since, limit):
    """POSTs new keys until one gets a 2xx; returns the seconds since `since`. A 500 fails."""
    codes = {}
    while time.monotonic() - since < limit:
        status, _, body = post_ride(cluster, new_key("probe"))
        codes[status] = codes.get(status, 0) + 1
        check(status != 500, "a POST /rides got 500 during the failover: %r" % body[:300])
        if 200 <= status < 300:
            log("  answers meanwhile: %s" % json.dumps(codes, sort_keys=True))
            return time.monotonic() - since
        time.sleep(0.2)
    raise Failure("no 2xx within %.0f s of the fault (answers: %s)" % (limit, codes))


def status_summary(cluster):
    text = cluster.status()
    leaders = [line for line in text.splitlines() if line.startswith("leader: ")]
    nodes = [line for line in text.splitlines() if line[:2] in ("n1", "n2", "n3") and " role=" in line]
    return text, leaders, nodes


def wait_healthy(cluster, seconds=60):
    """One leader, both standbys streaming from it, one of them synchronous."""
    deadline = time.monotonic() + seconds
    text = ""
    while time.monotonic() < deadline:
        text, leaders, nodes = status_summary(cluster)
        streaming = [n for n in nodes if "replication=streaming" in n]
        sync = [n for n in nodes if "sync_state=sync " in n]
        # And Patroni has recorded that standby as the synchronous one (its /sync key): until it
        # has, a crash of the leader's postgres is recovered in place rather than failed over.
        recorded = [n for n in nodes if "role=sync_standby state=running" in n and "sync_state=sync " in n]
        if leaders and leaders[0] != "leader: none" and len(streaming) == 2 and len(sync) == 1 and recorded:
            return leaders[0].split()[1]
        time.sleep(1)
    raise Failure("not one leader with two streaming standbys (one synchronous) within %d s:\n%s" % (seconds, text))


def test_cluster(cluster):
    log("start --ha%s" % (" --netns " + cluster.netns_prefix if cluster.netns_prefix else ""))
    started = time.monotonic()
    cluster.start()
    log("  up in %.1f s" % (time.monotonic() - started))

    leader = wait_healthy(cluster)
    check(cluster.leader() == leader, "leader and status disagree")
    log("status: leader %s, two standbys streaming, one synchronous" % leader)
    with open(os.path.join(cluster.dir, "app.env")) as f:
        secrets = [line for line in f if line.startswith("PROVIDER_KEY_SECRET=")]
    check(len(secrets) == 1 and len(secrets[0].strip().split("=", 1)[1]) == 64,
          "app.env has no 64-hex-digit PROVIDER_KEY_SECRET")

    status, _, body = post_ride(cluster, new_key("first"))
    check(status == 201, "POST /rides through HAProxy: %d %r" % (status, body[:300]))
    log("POST /rides through HAProxy: 201")
    pids = cluster.app_pids()

    # Switchover.
    started = time.monotonic()
    out = cluster.run("switchover").stdout
    check("old leader: %s" % leader in out and "new leader: " in out, "switchover printed: %r" % out)
    new = cluster.leader()
    check(new and new != leader, "switchover: leader %s -> %s" % (leader, new))
    seconds = seconds_to_first_2xx(cluster, started, 60)
    log("switchover %s -> %s: first 2xx %.1f s after it began" % (leader, new, seconds))
    leader = wait_healthy(cluster)

    # kill -9 of the leader's postgres, with a key answered before it.
    key = new_key("replay")
    status, _, before = post_ride(cluster, key)
    check(status == 201, "POST /rides before the failover: %d" % status)
    started = time.monotonic()
    cluster.run("kill-postgres", leader)
    seconds = seconds_to_first_2xx(cluster, started, FAILOVER_BOUND + 30)
    new = cluster.leader()
    check(new and new != leader, "kill-postgres of %s: the leader is now %s" % (leader, new))
    log("kill -9 of %s's postgres: new leader %s, first 2xx %.1f s after the kill" % (leader, new, seconds))
    check(seconds <= FAILOVER_BOUND, "first 2xx %.1f s after the kill (bound %.0f s)" % (seconds, FAILOVER_BOUND))
    status, headers, after = post_ride(cluster, key)
    check(status == 201 and after == before and header(headers, "Idempotent-Replayed") == "true",
          "the key sent before the failover: %d %s %r (before: %r)" % (status, header(headers, "Idempotent-Replayed"),
                                                                     after[:200], before[:200]))
    log("the key sent before the failover replays its answer (Idempotent-Replayed: true)")
    check(cluster.app_pids() == pids, "a daemon was restarted")
    log("no daemon restarted")
    leader = wait_healthy(cluster, 90)
    log("the old leader rejoined as a standby (pg_rewind)")

    if cluster.netns_prefix:
        if cluster.partition:
            leader = test_partition(cluster, leader)
        test_patroni_kill(cluster, leader)
        leader = wait_healthy(cluster, 90)

    # No leader at all.
    for n in (1, 2, 3):
        cluster.run("stop-member", "patroni%d" % n)
    check(cluster.leader() is None, "a leader with every patroni stopped: %s" % cluster.leader())
    log("patroni stopped on every node: leader: none")
    deadline = time.monotonic() + 20
    ready = {}
    while time.monotonic() < deadline:
        ready = {api: http("GET", "http://%s/readyz" % cluster.env[api.upper() + "_ADDRESS"])[0]
                 for api in ("api1", "api2")}
        if all(code == 503 for code in ready.values()):
            break
        time.sleep(0.5)
    check(all(code == 503 for code in ready.values()), "/readyz without a leader: %s" % ready)
    log("/readyz of each API: 503")
    for api in ("api1", "api2"):
        for _ in range(3):
            status, headers, body = post_ride(cluster, new_key("noleader"), "http://" + cluster.env[api.upper() + "_ADDRESS"])
            check(status == 503 and header(headers, "Retry-After"),
                  "POST /rides to %s without a leader: %d Retry-After=%s %r" % (api, status, header(headers, "Retry-After"),
                                                                             body[:200]))
    status, _, _ = post_ride(cluster, new_key("noleader"))
    check(status == 503, "POST /rides through HAProxy without a leader: %d" % status)
    log("POST /rides without a leader: 503 with Retry-After from each API, 503 through HAProxy")
    started = time.monotonic()
    for n in (1, 2, 3):
        cluster.run("start-member", "patroni%d" % n)
    seconds = seconds_to_first_2xx(cluster, started, 60)
    log("patroni started again on every node: first 2xx after %.1f s" % seconds)
    wait_healthy(cluster, 90)
    check(cluster.app_pids() == pids, "a daemon was restarted")


def psql(cluster, sql):
    return subprocess.run(["psql", "-X", "-At", "-h", "127.0.0.1", "-p", cluster.env["PG_PORT"], "-U", "postgres",
                           "-d", "rocket_rides", "--set=connect_timeout=3", "-c", sql],
                          capture_output=True, text=True, timeout=30)


def test_partition(cluster, leader):
    check(psql(cluster, "CREATE TABLE IF NOT EXISTS ha_test_marker (v text)").returncode == 0, "CREATE TABLE failed")
    started = time.monotonic()
    cluster.run("partition", leader)
    written = False
    while time.monotonic() - started < 60 and not written:
        new = cluster.leader()
        if new and new != leader:
            written = psql(cluster, "INSERT INTO ha_test_marker VALUES ('partition')").returncode == 0
        if not written:
            time.sleep(0.5)
    check(written, "no new leader took a write within 60 s of partitioning %s" % leader)
    log("partition of %s: %s leads and took a write %.1f s after the cut" % (leader, new, time.monotonic() - started))
    time.sleep(3)
    cluster.run("heal", leader)
    wait_healthy(cluster, 90)
    check(cluster.leader() == new, "after the heal the leader is %s, not %s" % (cluster.leader(), new))
    rows = psql(cluster, "SELECT count(*) FROM ha_test_marker WHERE v = 'partition'").stdout.strip()
    check(rows == "1", "the row written during the partition: count %r" % rows)
    log("healed: %s rejoined, %s still leads, the row written meanwhile is there" % (leader, new))
    return new


def test_patroni_kill(cluster, leader):
    started = time.monotonic()
    cluster.run("stop-member", "patroni" + leader[1:], "--kill")
    # Its postgres still runs as the primary, and may even serve the first requests (its commits
    # still wait for the synchronous standby) until HAProxy finds its REST API gone; the lock
    # expires after ttl. So: first the new leader, then the first 2xx.
    new = None
    while time.monotonic() - started < 40:
        new = cluster.leader()
        if new and new != leader:
            break
        time.sleep(0.5)
    check(new and new != leader, "kill -9 of patroni on %s: leader %s 40 s later" % (leader, new))
    seconds = seconds_to_first_2xx(cluster, started, 60)
    log("kill -9 of patroni on %s: new leader %s, first 2xx %.1f s after the kill" % (leader, new, seconds))
    cluster.run("start-member", "patroni" + leader[1:])
    wait_healthy(cluster, 90)
    log("patroni on %s started again: it rejoined as a standby" % leader)


def leftovers(directory, prefix):
    found = []
    for pid, argv in command_lines():
        cmdline = b" ".join(argv).decode(errors="replace")
        if directory in cmdline:
            found.append("%d: %s" % (pid, cmdline[:150]))
    if prefix:
        found += ["namespace " + name for name in os.listdir("/run/netns") if name.startswith(prefix)] \
            if os.path.isdir("/run/netns") else []
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        found += ["link " + line.split(":")[1].strip() for line in links.splitlines() if prefix in line]
    return found


def inside(args):
    directory = tempfile.mkdtemp(prefix="rr-ha-test-")
    prefix = args.netns_prefix
    cluster = Cluster(directory, os.path.abspath(args.bin_dir), prefix)
    cluster.partition = args.partition
    failed = None
    try:
        test_cluster(cluster)
    except Failure as error:
        failed = str(error)
    except subprocess.TimeoutExpired as error:
        failed = "timed out: %s" % error
    finally:
        if failed:
            log("FAILED: %s" % failed)
            try:
                print(cluster.status(), flush=True)
            except Exception:  # noqa: BLE001 (the status is a courtesy)
                pass
        log("stop")
        result = cluster.run("stop", check_rc=False, timeout=300)
        if result.returncode != 0:
            failed = failed or "stop failed: %s" % result.stderr[-1000:]
        result = cluster.run("stop", check_rc=False, timeout=300)
        if result.returncode != 0:
            failed = failed or "a second stop failed: %s" % result.stderr[-1000:]
        left = leftovers(directory, prefix)
        if left:
            failed = failed or "stop left behind: %s" % "; ".join(left)
        else:
            log("stopped: no process, namespace or link left")
        if failed and args.keep:
            log("logs kept in %s/logs" % directory)
        else:
            shutil.rmtree(directory, ignore_errors=True)
    if failed:
        log("FAILED: %s" % failed)
        return 1
    log("passed")
    return 0


def can_use_netns():
    return os.geteuid() == 0 and shutil.which("ip") and subprocess.run(
        ["ip", "netns", "list"], capture_output=True).returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin-dir", default=os.path.join(REPO, "build", "bin"))
    parser.add_argument("--keep", action="store_true", help="keep the cluster directory after a failure")
    parser.add_argument("--no-netns", action="store_true", help="on loopback only, even as root")
    parser.add_argument("--partition", action="store_true", help="also partition the leader and heal it (--netns)")
    parser.add_argument("--netns-prefix", help=argparse.SUPPRESS)  # set for the run inside the namespace
    args = parser.parse_args()
    for tool in ("patroni", "etcd", "etcdctl", "haproxy", "pgbouncer", "redis-server", "psql"):
        if not shutil.which(tool):
            log("%s is missing (scripts/install-deps.sh)" % tool)
            return 1
    if args.netns_prefix is not None or args.no_netns or not can_use_netns():
        if args.netns_prefix == "":
            args.netns_prefix = None
        return inside(args)
    # A namespace of our own to be the cluster's "host", with only loopback: cluster.sh --netns
    # refuses the machine's own.
    host = "rrha%d" % (os.getpid() % 100000)
    subprocess.run(["ip", "netns", "add", host], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", host, "ip", "link", "set", "lo", "up"], check=True)
        command = ["ip", "netns", "exec", host, sys.executable, os.path.abspath(__file__), "--bin-dir",
                   args.bin_dir, "--netns-prefix", "rh%d-" % (os.getpid() % 100000)]
        if args.keep:
            command.append("--keep")
        if args.partition:
            command.append("--partition")
        return subprocess.run(command).returncode
    finally:
        subprocess.run(["ip", "netns", "del", host])


if __name__ == "__main__":
    sys.exit(main())
