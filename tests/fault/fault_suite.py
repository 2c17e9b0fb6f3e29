#!/usr/bin/env python3
"""Proof under fire: a fault-injection suite that checks exactly-once with numbers.

Starts real processes (PostgreSQL and Redis through scripts/local-servers.sh, the stand-in
provider, two APIs, two enqueuers, two completers), drives concurrent clients that retry their
own Idempotency-Key until a final answer, injects faults while the traffic runs (kill -9 of
APIs, enqueuers and completers; PostgreSQL fast stop/start; Redis stop/start; provider 5xx,
hangs past STRIPE_TIMEOUT and dropped connections after a charge), lets the system quiesce and
then checks the invariants independently (SQL, redis-cli, the provider's /_mock/charges):

  1. a key answered 201 has exactly one ride and exactly one provider charge; no request is
     charged twice; no charge exists without its ride;
  2. every key ends finished (201 or 402), none locked or unfinished;
  3. every finished 201 staged exactly one job and that job reached Redis (distinct jids);
  4. every client's final answer (status and body) equals the stored response of its key.

The cluster profiles (cluster-short, cluster-long) run the same traffic, faults and checks over
scripts/cluster.sh's production shape instead: clients go through HAProxy to two APIs, every
daemon reaches PostgreSQL through PgBouncer in transaction mode (DATABASE_PREPARED_STATEMENTS=off),
PostgreSQL is durable, and members are killed and started again through the cluster script (the
one place that knows how each is started; every other client keeps its connection to HAProxy
open, as an app on keep-alive does). Besides the faults above they restart PgBouncer
(safe shutdown or kill -9), kill -9 one API behind HAProxy and start it again, and do rolling
restarts of both APIs (scripts/cluster.sh rolling-restart: SIGTERM one, wait for it to exit,
start it, wait until HAProxy has it UP, then the other) while the clients keep sending. One more
invariant there:

  5. no client sees a connection error, a timeout or a 5xx during a rolling restart (every
     client error is recorded with its start and end; none may overlap a restart's window).
     Other faults may show clients errors, which they retry.

The HA profiles (ha-short, ha-long) run the same clients over scripts/cluster.sh start --ha:
PostgreSQL as three Patroni nodes (synchronous_mode_strict) over three etcd members, each node in
a network namespace of its own, HAProxy routing to the leader, PgBouncer through it, two of each
daemon. The whole run happens inside a network namespace the suite makes and deletes (root; see
run_in_netns). On a healthy cluster, one fault at a time, it kills the leader's postgres (kill -9),
kills the leader's Patroni (kill -9, started again once another node leads), cuts the leader off
the network (healed afterwards), kills an etcd member (started again), each followed by a wait for
a leader and a synchronous standby with the old leader back; and a few app faults of the other
profiles. The checker reads the provider's records and the final leader's own database (not the
API, not HAProxy), and adds:

  8. no client key is charged twice: every charge at the provider is attributed to a client key
     (its provider key in the final database, its id in a ride there or in a 201 a client saw, the
     derived provider key recomputed from the client's key and user id when the build derives them
     from PROVIDER_KEY_SECRET, or the key row its description names); a charge the final database
     does not know and no client saw acknowledged counts as a double charge too;
  9. nothing acknowledged is lost: every 201 a client saw has its ride, with that charge and under
     that client's key, on the final leader, and the charge at the provider; every 200 to a cancel
     has its ride cancelled with that refund.

They print one line, RESULT PASS or RESULT FAIL with seed=, failovers= (leader changes
observed), double_charges=, lost_acknowledged=, lost_jobs=, stuck_keys=, max_unavailable_s= (the
longest span in which no good client got a 2xx) and p50_unavailable_s= (the median over the
leader faults of the time from the fault to the first 2xx that wrote, sent after the fault and
answered once the new leader was seen), then the other figures. PASS needs every invariant and at
least three leader changes. --async-replicas runs the cluster with asynchronous replicas, for the
record of what a failover then loses.

Beside the good clients, in every profile, runs a hostile client (two threads, a user of its own,
or no valid token) that sends at random the probes of docs/http-api.md's "Hostile clients": methods of
200-4000 bytes on random paths, smuggling shapes (TE gzip, TE with Content-Length, TE in
HTTP/1.0, two Hosts, no Host, Expect: foo, Content-Encoding: gzip) with a request pipelined behind
them, a few dozen held and half-sent connections, drip-fed heads, a flood of POST /rides from its
own user (while the provider is slow, when a fault makes it so), invalid Idempotency-Keys, JSON
and GET /rides queries. Every probe of an invalid shape carries a key starting "hostile-invalid-".

  6. every answer the API gave the hostile client has the status docs/http-api.md gives, none a 5xx but 503;
     a smuggling shape sent straight to an API gets exactly one answer and a closed connection
     (through HAProxy, which frames requests itself, at most the pipelined /healthz's answer
     more); every probe is answered, except during faults that stop an API answering (kill -9,
     PostgreSQL or PgBouncer down, and for probes straight to an API a rolling restart), when
     connection errors and HAProxy's own 502/503/504 are not counted;
  7. nothing an invalid shape carried wrote a row: no key row holds "hostile-invalid-", and every
     key, ride and charge of the hostile user belongs to a valid key it sent; the answers to its
     valid keys equal what they store.

Prints one summary line and exits 0 only if every invariant holds (1 if one breaks, 2 if the
harness itself could not run). Every process and server it started is stopped on the way out,
whatever happens (try/finally, SIGINT/SIGTERM handlers, PR_SET_PDEATHSIG on the children and a
guardian that stops the servers if this process is killed outright).

Python 3 standard library only. Usage:

  tests/fault/fault_suite.py --profile short --bin-dir build/bin
  tests/fault/fault_suite.py --profile long --duration 1200 --clients 32 --seed 1234
  tests/fault/fault_suite.py --profile cluster-short --bin-dir build/bin
  tests/fault/fault_suite.py --profile ha-short --bin-dir build/bin          (root)
"""

import argparse
import collections
import ctypes
import hashlib
import hmac
import http.client
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LOCAL_SERVERS = os.path.join(REPO, "scripts", "local-servers.sh")
CLUSTER = os.path.join(REPO, "scripts", "cluster.sh")
STRIPE_KEY = "sk_test_fault_suite"

PROFILES = {
    # duration: seconds of traffic with faults; fault_rate: extra faults per minute after the
    # guaranteed one of each kind; give_up: seconds a client keeps retrying one key.
    "short": dict(duration=75, clients=8, fault_rate=10.0, fast=True, give_up=20.0, quiesce=90.0),
    "long": dict(duration=1200, clients=32, fault_rate=6.0, fast=False, give_up=30.0, quiesce=180.0),
    # Over scripts/cluster.sh (topology "cluster"): PostgreSQL is always durable there, and two
    # more kinds of faults need slots, one of them (a rolling restart) several seconds long.
    "cluster-short": dict(duration=120, clients=8, fault_rate=6.0, fast=False, give_up=20.0, quiesce=90.0,
                          topology="cluster"),
    "cluster-long": dict(duration=1200, clients=32, fault_rate=6.0, fast=False, give_up=30.0, quiesce=180.0,
                         topology="cluster"),
    # Redis as a master, a replica and three sentinels (scripts/local-servers.sh --sentinel), the
    # enqueuers with REDIS_SENTINELS and REDIS_MIN_REPLICAS=1; redis_restart becomes
    # redis_failover, at least `failovers` times. The checker reads the final master's queue.
    "sentinel-short": dict(duration=45, clients=8, fault_rate=10.0, fast=True, give_up=20.0, quiesce=90.0,
                           redis="sentinel", failovers=3),
    # PostgreSQL under Patroni (scripts/cluster.sh start --ha): three nodes n1..n3, each in a
    # network namespace of its own, leader lock in etcd, synchronous_mode_strict, HAProxy routing
    # to the leader, PgBouncer in front, two of each daemon. The faults are HA_FAULT_KINDS (each
    # at least once, `leader_faults` rounds of the three leader faults) and app_kinds; the checker
    # reads the provider's records and the final leader's database. The whole run happens inside
    # a network namespace the suite makes (see run_in_netns).
    "ha-short": dict(duration=100, clients=8, fault_rate=0.0, fast=False, give_up=30.0, quiesce=90.0,
                     topology="ha", leader_faults=1, app_kinds=("api_kill_in_flight",)),
    "ha-long": dict(duration=1200, clients=32, fault_rate=4.0, fast=False, give_up=30.0, quiesce=180.0,
                    topology="ha", leader_faults=5,
                    app_kinds=("api_kill", "api_kill_in_flight", "mock_fail", "mock_hang", "mock_drop",
                               "enqueuer_kill", "completer_kill", "pgbouncer_restart")),
    # The checker's self-test over the same cluster (with --plant-violations): one leader fault, so
    # that the final leader is another node than the first, then the plants.
    "ha-plant": dict(duration=30, clients=8, fault_rate=0.0, fast=False, give_up=30.0, quiesce=60.0,
                     topology="ha", plan=("ha_kill_postgres",), app_kinds=(), min_failovers=1),
    # A point-in-time restore in the middle of traffic over the plain cluster, then reconciliation
    # against the provider (tests/fault/restore_drill.py has the scenario and its own checker).
    "restore-short": dict(duration=40, clients=6, fault_rate=0.0, fast=False, topology="restore"),
    "restore-long": dict(duration=600, clients=24, fault_rate=0.0, fast=False, topology="restore"),
    "restore-plant": dict(duration=20, clients=4, fault_rate=0.0, fast=False, topology="restore"),
}

FAULT_KINDS = [
    "api_kill_in_flight",  # provider slowed so charges are in flight, then kill -9 of an API
    "api_kill",  # kill -9 of an API at a random moment
    "pg_restart",  # PostgreSQL fast stop, down a while, start
    "redis_restart",  # Redis stopped a while, started on the same port
    "mock_fail",  # provider answers 5xx
    "mock_hang",  # provider slower than STRIPE_TIMEOUT
    "mock_drop",  # provider records the charge, then drops the connection
    "enqueuer_kill",  # kill -9 of an enqueuer, restart
    "completer_kill",  # kill -9 of a completer, restart
]

# Only over the cluster topology.
CLUSTER_FAULT_KINDS = [
    "pgbouncer_restart",  # PgBouncer stopped (safe shutdown or kill -9), down a while, started
    "rolling_restart",  # SIGTERM, exit, start, UP behind HAProxy: api1, then api2; must go unseen
]

# Only over the Patroni cluster (topology "ha"). The first three take the leader away; each is
# followed by a wait for a new leader and a synchronous standby (and the old leader back).
HA_LEADER_FAULT_KINDS = [
    "ha_kill_postgres",  # kill -9 of the leader's postmaster: Patroni fails over (primary_start_timeout 0)
    "ha_kill_patroni",  # kill -9 of the leader's Patroni (its PostgreSQL keeps running): the lock
                        # expires after ttl; Patroni started again once another node leads
    "ha_partition",  # the leader's node cut off the network (etcd, replication, clients); healed later
    "ha_standbys_lost",  # both standbys cut off a few seconds while the clients still reach the
                         # leader, then kill -9 of the leader's postgres and the standbys healed:
                         # what only the leader had is lost unless commits waited for a standby
]
HA_FAULT_KINDS = HA_LEADER_FAULT_KINDS + [
    "ha_etcd_kill",  # kill -9 of one etcd member, started again a few seconds later: no failover
]


def _clock(t):
    return time.strftime("%H:%M:%S", time.localtime(t)) + ("%.3f" % (t % 1))[1:]


def log(message):
    sys.stdout.write("[fault_suite %s] %s\n" % (time.strftime("%H:%M:%S"), message))
    sys.stdout.flush()


class HarnessError(Exception):
    pass


class Stop(BaseException):
    """Raised in the main thread by SIGINT/SIGTERM so that finally blocks clean up."""


# ---------------------------------------------------------------------------------------------
# Processes


_libc = None


def _set_pdeathsig():
    # Runs in the child before exec: die with the thread that spawned us. Every spawn happens on
    # the main thread, which lives for the whole run.
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Daemon:
    """One of the suite's binaries, started with its own environment, restartable."""

    def __init__(self, name, argv, env, log_dir):
        self.name = name
        self.argv = argv
        self.env = env
        self.log_path = os.path.join(log_dir, name + ".log")
        self.proc = None
        self.starts = 0
        self.kills = 0

    def start(self):
        assert threading.current_thread() is threading.main_thread()
        logfile = open(self.log_path, "ab")
        logfile.write(("\n==== start %d at %s ====\n" % (self.starts + 1, time.strftime("%H:%M:%S"))).encode())
        logfile.flush()
        self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=logfile,
                                     stderr=subprocess.STDOUT, preexec_fn=_set_pdeathsig)
        logfile.close()
        self.starts += 1

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.kills += 1
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def stop(self, grace=5.0):
        if not self.alive():
            return
        try:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        except OSError:
            pass


class ClusterMember:
    """A member of scripts/cluster.sh's cluster, with Daemon's interface: the script starts and
    stops it (one source of truth for how each member runs); its pid file tells whether it runs.
    Not our child, so its exit status is unknown."""

    class _Proc:
        def __init__(self, pid):
            self.pid = pid
            self.returncode = None

    def __init__(self, cluster_dir, name, slow, port=None):
        self.cluster_dir = cluster_dir
        self.name = name
        self.slow = slow
        self.port = port
        self.log_path = os.path.join(cluster_dir, "logs", name + ".log")
        self.starts = 1
        self.kills = 0

    def pid(self):
        try:
            with open(os.path.join(self.cluster_dir, "pids", self.name + ".pid")) as f:
                pid, started = f.read().split()
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            # fields[0] is the state; fields[19] the start time (field 22 of stat).
            if fields[0] != "Z" and fields[19] == started:
                return int(pid)
        except (OSError, ValueError, IndexError):
            pass
        return None

    @property
    def proc(self):
        return ClusterMember._Proc(self.pid() or -1)

    def alive(self):
        return self.pid() is not None

    def _script(self, *args):
        result = run([CLUSTER] + list(args), timeout=120 * self.slow, check=False)
        if result.returncode != 0:
            raise HarnessError("scripts/cluster.sh %s failed (exit %d): %s" % (
                " ".join(args), result.returncode, result.stderr.decode(errors="replace")[-2000:]))

    def start(self):
        # Returns once it serves (for an API: once HAProxy has it UP again).
        self._script("start-member", self.cluster_dir, self.name)
        self.starts += 1

    def kill9(self):
        if self.alive():
            self.kills += 1
        self._script("stop-member", self.cluster_dir, self.name, "--kill")

    def stop(self, grace=5.0):
        self._script("stop-member", self.cluster_dir, self.name)


def run(argv, env=None, timeout=120, check=True, capture=True):
    result = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, timeout=timeout,
                            stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                            stderr=subprocess.PIPE if capture else subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise HarnessError("%s failed (exit %d): %s" % (" ".join(argv), result.returncode,
                                                       (result.stderr or b"").decode(errors="replace")[-2000:]))
    return result


_taken_ports = set()


def free_port():
    """A free port below the kernel's ephemeral range, so that no outgoing connection takes it
    while a killed daemon is down and before it binds the port again."""
    import socket
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(10000, max(10001, low))
        if port in _taken_ports:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        _taken_ports.add(port)
        return port
    raise HarnessError("no free port below %d" % low)


def http_call(port, method, path, body=None, headers=None, timeout=5.0):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read()
        return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data
    finally:
        conn.close()


class KeptConnection:
    """One client's keep-alive connection: reused while the server keeps it, opened again after
    a "Connection: close", an error or a timeout (the request's answer is then unknown)."""

    def __init__(self):
        self.conn = None
        self.port = None

    def call(self, port, method, path, body, headers, timeout):
        if self.conn is None or self.port != port:
            self.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            self.port = port
        elif self.conn.sock is not None:
            self.conn.sock.settimeout(timeout)
        else:
            self.conn.timeout = timeout
        try:
            self.conn.request(method, path, body=body, headers=headers or {})
            response = self.conn.getresponse()
            data = response.read()
        except BaseException:
            self.close()
            raise
        if response.will_close:
            self.close()
        return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def is_sanitized(binary):
    try:
        with open(binary, "rb") as f:
            return b"AddressSanitizer" in f.read()
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# Servers (PostgreSQL and Redis in a directory of their own)


class Servers:
    def __init__(self, work_dir, fast, adopt=False, sentinel=False):
        # adopt: the servers scripts/cluster.sh started in WORK_DIR/servers (see adopt()).
        self.dir = os.path.join(work_dir, "servers")
        if not adopt:
            os.makedirs(self.dir)
        self.fast = fast
        self.sentinel = sentinel
        self.started = False
        self.pg_up = False
        self.redis_up = False
        self.pgbin = sorted((d for d in os.listdir("/usr/lib/postgresql")), key=lambda v: [int(x) for x in v.split(".") if x.isdigit()])
        self.pgbin = os.path.join("/usr/lib/postgresql", self.pgbin[-1], "bin") if self.pgbin else None
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def start(self):
        argv = [LOCAL_SERVERS, "start", self.dir] + (["--fast"] if self.fast else []) + (
            ["--sentinel"] if self.sentinel else [])
        self.started = True
        # A guardian outside our process tree: if this harness is killed outright, it stops the
        # servers (the daemons die with us through PR_SET_PDEATHSIG).
        # setsid -f forks, so the guardian is nobody's child: CTest's kill of a timed-out test's
        # process tree does not reach it. It does nothing once the directory is gone.
        subprocess.run(
            ["setsid", "-f", "sh", "-c",
             'while kill -0 "$1" 2>/dev/null; do sleep 1; done; '
             '[ -f "$3/ports" ] && "$2" stop "$3" >/dev/null 2>&1; exit 0',
             "guardian", str(os.getpid()), LOCAL_SERVERS, self.dir],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        # The script picks ports in 20000-49999, which overlaps the kernel's ephemeral range: a
        # port that looked free can be taken by an outgoing connection before PostgreSQL binds it.
        # Starting again in the same directory picks new ports (and skips initdb).
        for attempt in range(4):
            result = run(argv, timeout=180, check=False)
            if result.returncode == 0:
                break
            log("local-servers.sh start failed (attempt %d): %s" % (
                attempt + 1, result.stderr.decode(errors="replace").strip().splitlines()[-3:]))
            run([LOCAL_SERVERS, "stop", self.dir], timeout=120, check=False)
            time.sleep(1)
        else:
            raise HarnessError("scripts/local-servers.sh start failed 4 times")
        out = result.stdout.decode()
        env = {}
        for line in out.splitlines():
            if line.startswith("export "):
                name, _, value = line[len("export "):].partition("=")
                env[name] = value
        self.database_url = env["DATABASE_URL"]
        self.redis_url = env["REDIS_URL"]
        if self.sentinel:
            self.redis_sentinels = env["REDIS_SENTINELS"]
            self.redis_sentinel_master = env["REDIS_SENTINEL_MASTER"]
        self._read_ports()

    def _read_ports(self):
        """The ports scripts/local-servers.sh picked, from its DIR/ports; both servers are up."""
        ports = {}
        with open(os.path.join(self.dir, "ports")) as f:
            for line in f:
                name, _, value = line.strip().partition("=")
                ports[name] = value
        self.pg_port = int(ports["PG_PORT"])
        self.redis_port = int(ports["REDIS_PORT"])
        if self.sentinel:
            # Which server is the master changes with each failover; these two never do.
            self.redis_ports = {int(ports["REDIS_PORT"]): ("redis.pid", self.dir),
                                int(ports["REPLICA_PORT"]): ("redis-replica.pid", os.path.join(self.dir, "replica"))}
            self.sentinel_ports = [int(p) for p in ports["SENTINEL_PORTS"].strip('"').split()]
        self.pg_up = True
        self.redis_up = True

    def adopt(self, database_url, redis_url):
        """Servers started by someone else in self.dir (scripts/cluster.sh); they stop them."""
        self.database_url = database_url
        self.redis_url = redis_url
        self._read_ports()

    # The same options scripts/local-servers.sh starts PostgreSQL with.
    def pg_options(self):
        opts = "-p %d -k %s/pg -c listen_addresses=127.0.0.1 -c max_connections=300" % (self.pg_port, self.dir)
        if self.fast:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        return opts

    def pg_stop(self):
        run(self.as_pg + [os.path.join(self.pgbin, "pg_ctl"), "-w", "-t", "60", "-D", os.path.join(self.dir, "pg"),
                          "-m", "fast", "stop"], timeout=90)
        self.pg_up = False

    def pg_start(self):
        for attempt in range(3):
            result = run(self.as_pg + [os.path.join(self.pgbin, "pg_ctl"), "-w", "-t", "60", "-D",
                                       os.path.join(self.dir, "pg"), "-l", os.path.join(self.dir, "pg", "server.log"),
                                       "-o", self.pg_options(), "start"], timeout=90, check=False)
            if result.returncode == 0:
                self.pg_up = True
                return
            time.sleep(1)
        raise HarnessError("PostgreSQL did not start again: %s" % result.stderr.decode(errors="replace"))

    def psql(self, sql, timeout=60):
        result = run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", self.database_url, "-c", sql],
                     timeout=timeout)
        return result.stdout.decode()

    def psql_json(self, sql):
        out = self.psql("SELECT coalesce(json_agg(t), '[]'::json) FROM (%s) t" % sql).strip()
        return json.loads(out)

    def redis_cli(self, *args, timeout=30, check=True):
        return run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.redis_port)] + list(args), timeout=timeout,
                   check=check)

    def redis_stop(self):
        # Stops the server the way an operator's restart would, saving the dataset first: the
        # suite's Redis runs without persistence (--save ''), and a job that reached Redis must
        # still be there when the checker looks.
        self.redis_cli("SHUTDOWN", "SAVE", check=False)
        pidfile = os.path.join(self.dir, "redis.pid")
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                with open(pidfile) as f:
                    pid = int(f.read().strip())
                os.kill(pid, 0)
            except (OSError, ValueError):
                break
            time.sleep(0.05)
        self.redis_up = False

    def redis_start(self):
        # The same arguments scripts/local-servers.sh starts Redis with; --dir holds the dump.
        run(["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "yes", "--pidfile", os.path.join(self.dir, "redis.pid"),
             "--logfile", os.path.join(self.dir, "redis.log"), "--dir", self.dir], timeout=30)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.redis_cli("PING", check=False).returncode == 0:
                self.redis_up = True
                return
            time.sleep(0.05)
        raise HarnessError("Redis did not start again on port %d" % self.redis_port)

    def sentinel_master_port(self):
        """The master port the first sentinel that answers names, or None."""
        for port in self.sentinel_ports:
            out = run(["redis-cli", "-p", str(port), "SENTINEL", "get-master-addr-by-name",
                       self.redis_sentinel_master], timeout=10, check=False).stdout.decode().split()
            if len(out) == 2:
                return int(out[1])
        return None

    def redis_role(self, port):
        out = run(["redis-cli", "-p", str(port), "ROLE"], timeout=10, check=False).stdout.decode().split()
        return out[0] if out else None

    def redis_failover(self, rng):
        """kill -9 of the master; the sentinels promote the replica; the old master is started
        again, empty (no persistence), and the sentinels make it a replica of the new one."""
        old = self.redis_port
        pidfile, directory = self.redis_ports[old]
        with open(os.path.join(self.dir, pidfile)) as f:
            os.kill(int(f.read().strip()), signal.SIGKILL)
        killed = time.time()
        deadline = killed + 60
        while time.time() < deadline:
            new = self.sentinel_master_port()
            if new not in (None, old) and self.redis_role(new) == "master":
                break
            time.sleep(0.1)
        else:
            raise HarnessError("the sentinels did not promote a replica within 60 s of killing %d" % old)
        self.redis_port = new
        log("fault: Redis master %d killed, %d promoted after %.1fs" % (old, new, time.time() - killed))
        # A while with the new master alone: no replica can acknowledge, so pushes wait staged.
        time.sleep(rng.uniform(0.5, 2.0))
        try:
            os.remove(os.path.join(directory, "dump.rdb"))
        except FileNotFoundError:
            pass
        run(["redis-server", "--port", str(old), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "yes", "--repl-diskless-sync-delay", "0", "--pidfile", os.path.join(self.dir, pidfile),
             "--logfile", os.path.join(self.dir, pidfile.replace(".pid", ".log")), "--dir", directory], timeout=30)
        # Back as a replica with its link up before anything else may fail over to it.
        deadline = time.time() + 60
        while time.time() < deadline:
            info = run(["redis-cli", "-p", str(old), "INFO", "replication"], timeout=10,
                       check=False).stdout.decode()
            if "master_port:%d" % new in info and "master_link_status:up" in info:
                return
            time.sleep(0.1)
        raise HarnessError("Redis %d did not come back as a replica of %d within 60 s" % (old, new))

    def stop(self):
        if self.started:
            run([LOCAL_SERVERS, "stop", self.dir], timeout=120, check=False)


# ---------------------------------------------------------------------------------------------
# The Patroni cluster (scripts/cluster.sh start --ha)


def http_get_json(host, port, path, timeout=2.0):
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None
    finally:
        conn.close()


def _host_port(address):
    host, _, port = address.strip().strip("'\"").rpartition(":")
    return host.strip("[]"), int(port)


def parse_patroni_file(path):
    """name, the REST API's and PostgreSQL's connect addresses of one node's Patroni file
    (deploy/patroni.yml.in filled in): a line-based read of three keys, no YAML parser needed."""
    name, rest, pg = None, None, None
    section = None
    with open(path) as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if not line.startswith((" ", "\t")):
                key, _, value = line.partition(":")
                section = key.strip()
                if section == "name":
                    name = value.strip().strip("'\"")
                continue
            key, _, value = line.strip().partition(":")
            if key == "connect_address" and section == "restapi":
                rest = _host_port(value)
            elif key == "connect_address" and section == "postgresql":
                pg = _host_port(value)
    return name, rest, pg


class HAServers(Servers):
    """PostgreSQL as scripts/cluster.sh --ha runs it: three Patroni nodes; the suite's queries go
    straight to the node that leads at that moment (scripts/cluster.sh leader), never through
    HAProxy or PgBouncer, so that the checker reads what the leader itself has. Redis as the
    export lines say."""

    def __init__(self, cluster_dir, slow):
        Servers.__init__(self, cluster_dir, False, adopt=True)
        self.cluster_dir = cluster_dir
        self.slow = slow
        self.nodes = {}  # n1 -> {"rest": (host, port), "pg": (host, port)}
        self.pinned = None  # the node every query goes to (the final leader, while checking)
        self.exports = {}

    def configure(self, exports):
        self.exports = exports
        self.redis_url = exports["REDIS_URL"]
        parsed = urllib.parse.urlparse(self.redis_url)
        self.redis_host = parsed.hostname or "127.0.0.1"
        self.redis_port = parsed.port or 6379
        self.database_url = exports.get("DIRECT_DATABASE_URL") or exports["DATABASE_URL"]
        self.pg_up = True
        self.redis_up = True
        self.discover()

    def discover(self):
        """Each node's addresses, from its Patroni file under the cluster's directory."""
        for root, dirs, files in os.walk(self.cluster_dir):
            if root.count(os.sep) - self.cluster_dir.count(os.sep) >= 3:
                dirs[:] = []
            if "logs" in dirs:
                dirs.remove("logs")
            for name in files:
                if not name.endswith((".yml", ".yaml")) or "etcd" in name:
                    continue
                try:
                    node, rest, pg = parse_patroni_file(os.path.join(root, name))
                except (OSError, ValueError):
                    continue
                if node and rest and pg:
                    self.nodes[node] = {"rest": rest, "pg": pg}
        if not self.nodes:
            raise HarnessError("no Patroni node files (restapi and postgresql connect_address) under %s"
                               % self.cluster_dir)

    def leader(self):
        """The leading node as scripts/cluster.sh leader names it, or None."""
        try:
            result = run([CLUSTER, "leader", self.cluster_dir], timeout=20 * self.slow, check=False)
        except subprocess.TimeoutExpired:
            return None
        name = result.stdout.decode().strip()
        return name if result.returncode == 0 and name in self.nodes else None

    def members(self):
        """Patroni's view ({name: (role, state)}) from the first node whose REST API answers
        GET /cluster with a leader in it (a node cut off answers nothing we can reach)."""
        best = None
        for node in sorted(self.nodes):
            host, port = self.nodes[node]["rest"]
            try:
                status, data = http_get_json(host, port, "/cluster", timeout=1.5)
            except (OSError, http.client.HTTPException, ValueError):
                continue
            if status != 200 or not isinstance(data, dict):
                continue
            view = {m.get("name"): (m.get("role"), m.get("state")) for m in data.get("members", [])}
            if any(role == "leader" for role, _ in view.values()):
                return view
            best = best or view
        return best or {}

    def url_of(self, node):
        host, port = self.nodes[node]["pg"]
        return "postgresql://postgres@%s:%d/rocket_rides?connect_timeout=5" % (host, port)

    def pin(self, timeout=60.0):
        """Every query from here on goes to the node leading now, which must be no standby."""
        deadline = time.time() + timeout * self.slow
        while time.time() < deadline:
            node = self.leader()
            if node is not None:
                self.pinned = node
                try:
                    if self.psql("SELECT pg_is_in_recovery()", timeout=20).strip() == "f":
                        return node
                except (HarnessError, subprocess.TimeoutExpired):
                    pass
                self.pinned = None
            time.sleep(0.5)
        raise HarnessError("no leader accepting writes within %.0fs" % (timeout * self.slow))

    def psql_node(self, node, sql, timeout=60):
        result = run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", self.url_of(node), "-c", sql],
                     timeout=timeout)
        return result.stdout.decode()

    def psql(self, sql, timeout=60):
        node = self.pinned or self.leader()
        url = self.url_of(node) if node else self.database_url
        result = run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", url, "-c", sql], timeout=timeout)
        return result.stdout.decode()

    def redis_cli(self, *args, timeout=30, check=True):
        return run(["redis-cli", "-h", self.redis_host, "-p", str(self.redis_port)] + list(args), timeout=timeout,
                   check=check)

    def stop(self):
        pass  # scripts/cluster.sh stop


class LeaderMonitor:
    """Asks scripts/cluster.sh leader twice a second while the traffic runs: the timeline of
    leaders (None while there is none, or none answers) from which failovers are counted."""

    def __init__(self, servers, interval=0.5):
        self.servers = servers
        self.interval = interval
        self.timeline = []  # (time, leader or None), one entry per change
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = None

    def start(self):
        self.note(self.servers.leader())
        self.thread = threading.Thread(target=self._run, name="leader-monitor", daemon=True)
        self.thread.start()

    def stop(self):
        self.done.set()
        if self.thread is not None:
            self.thread.join(30)

    def note(self, leader):
        with self.lock:
            if not self.timeline or self.timeline[-1][1] != leader:
                self.timeline.append((time.time(), leader))
                log("leader: %s" % (leader or "none"))

    def _run(self):
        while not self.done.is_set():
            try:
                self.note(self.servers.leader())
            except Exception as e:  # a monitor that stops would undercount, never overcount
                log("leader monitor: %s" % e)
            self.done.wait(self.interval)

    def changes(self):
        """(time, old, new) for every change of leader from one node to another (a gap with
        no leader between them does not count twice; the same leader back after a gap is none)."""
        with self.lock:
            timeline = list(self.timeline)
        out = []
        last = None
        for t, leader in timeline:
            if leader is None:
                continue
            if last is not None and leader != last:
                out.append((t, last, leader))
            last = leader
        return out

    def current(self):
        with self.lock:
            return self.timeline[-1][1] if self.timeline else None


# ---------------------------------------------------------------------------------------------
# Clients


def final_codes(path):
    """The answers a good client's request may end with: POST /rides 201 or 402 (declined); a
    cancel of the client's own paid ride 200 (refunded, or already cancelled by its other key)."""
    return (200,) if path.endswith("/cancel") else (201, 402)


class KeyRecord:
    __slots__ = ("key", "user", "params", "path", "ride_id", "status", "body", "attempts", "gave_up", "replayed",
                 "first", "last", "statuses", "extra")

    def __init__(self, key, user, params, path="/rides", ride_id=None):
        self.key = key
        self.user = user
        self.params = params
        self.path = path  # /rides, or /rides/{id}/cancel for a cancel of ride_id
        self.ride_id = ride_id
        self.status = None
        self.body = None
        self.attempts = 0
        self.gave_up = False
        self.replayed = False
        self.first = time.time()
        self.last = None
        self.statuses = collections.Counter()
        self.extra = []  # (status, body, replayed) final answers of a second tap or a later resend


def random_ride_params(rng):
    """A ride's four coordinates as POST /rides takes them, each drawn from rng."""
    return [("origin_lat", "%.6f" % rng.uniform(-80, 80)), ("origin_lon", "%.6f" % rng.uniform(-170, 170)),
            ("target_lat", "%.6f" % rng.uniform(-80, 80)), ("target_lon", "%.6f" % rng.uniform(-170, 170))]


def start_threads(count, target, name):
    """`count` daemon threads running target(index), named name-index."""
    threads = []
    for i in range(count):
        t = threading.Thread(target=target, args=(i,), name="%s-%d" % (name, i), daemon=True)
        t.start()
        threads.append(t)
    return threads


def join_threads(threads, timeout):
    """Joins them all within one deadline; True when none is still running."""
    deadline = time.time() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.time()))
    return all(not t.is_alive() for t in threads)


class Traffic:
    def __init__(self, api_ports, users, clients, seed, give_up, request_timeout, keep_alive=False):
        self.api_ports = api_ports
        # keep_alive: every other client keeps one connection open across its requests (an app
        # on keep-alive, which makes HAProxy reuse its connections to the APIs); the others, and
        # every second tap or resend, open a connection per request.
        self.keep_alive = keep_alive
        self.users = users  # list of (email, customer, token, declines)
        self.clients = clients
        self.seed = seed
        self.give_up = give_up
        self.request_timeout = request_timeout
        # The share of 201 rides their rider then cancels (POST /rides/{id}/cancel).
        self.cancel_share = 0.25
        self.stop_new = threading.Event()
        self.abort = threading.Event()
        self.lock = threading.Lock()
        self.records = []
        self.requests = 0
        self.in_flight = 0
        self.threads = []
        self.racers = []
        self.errors = []
        # Every request that ended in a connection error, a timeout or a 5xx:
        # (sent, ended, status or None, key).
        self.client_errors = []
        # Every 2xx a client got: (sent, ended, replayed), for the HA profiles' unavailability.
        self.ok_times = []
        # Every 429 a good client got for its address's failed authentications: (sent, key). There
        # must be none: only the hostile client's address fails to authenticate.
        self.auth_throttled = []

    def _throttled(self, sent, status, data, key):
        if status == 429 and AUTH_THROTTLED in data:
            with self.lock:
                self.auth_throttled.append((sent, key))

    def _ok(self, sent, status, replayed):
        if status is not None and 200 <= status < 300:
            with self.lock:
                self.ok_times.append((sent, time.time(), replayed))

    def _note(self, sent, status, key):
        if status is None or status >= 500:
            with self.lock:
                self.client_errors.append((sent, time.time(), status, key))

    def start(self):
        self.threads = start_threads(self.clients, self._client, "client")

    def join(self, timeout):
        """The clients, then the racing cancels they started (none starts once the clients are done)."""
        deadline = time.time() + timeout
        done = join_threads(self.threads, timeout)
        with self.lock:
            racers = list(self.racers)
        return join_threads(racers, max(0.0, deadline - time.time())) and done

    def _client(self, index):
        rng = random.Random("%s-client-%d" % (self.seed, index))
        kept = KeptConnection() if self.keep_alive and index % 2 == 1 else None
        try:
            while not self.stop_new.is_set() and not self.abort.is_set():
                self._one_key(rng, kept)
                # A short think time between rides.
                self.abort.wait(rng.uniform(0.0, 0.3))
        except Exception:
            with self.lock:
                self.errors.append(traceback.format_exc())

    def _one_key(self, rng, kept=None):
        # About one ride in seven is for the declining customer; the rest pay.
        declining = [u for u in self.users if u[3]]
        paying = [u for u in self.users if not u[3]]
        user = rng.choice(declining) if declining and rng.random() < 0.15 else rng.choice(paying)
        params = random_ride_params(rng)
        record = self._send(rng, kept, user, KeyRecord(self._new_key(rng), user[0], params))
        # Some riders cancel their ride (issue 15): a new key, with its own retries, walk-aways,
        # double taps and resends; now and then a second cancel of the same ride races it under
        # another key, and the provider must refund the ride once.
        if record.status == 201 and rng.random() < self.cancel_share:
            ride_id = json.loads(record.body)["ride"]["id"]
            path = "/rides/%d/cancel" % ride_id
            if rng.random() < 0.2:
                racer = KeyRecord(self._new_key(rng), user[0], [("reason", "changed plans")], path, ride_id)
                thread = threading.Thread(target=self._send, args=(random.Random(rng.random()), None, user, racer),
                                          daemon=True)
                with self.lock:
                    self.racers.append(thread)
                thread.start()
            self._send(rng, kept, user, KeyRecord(self._new_key(rng), user[0], [("reason", "changed plans")], path,
                                                  ride_id))

    @staticmethod
    def _new_key(rng):
        return "fault-%s" % uuid.UUID(int=rng.getrandbits(128)).hex

    def _send(self, rng, kept, user, record):
        """Sends record's request until it gets a final answer or its client gives up; returns it."""
        body = urllib.parse.urlencode(record.params)
        key = record.key
        with self.lock:
            self.records.append(record)
        headers = {"Authorization": "Bearer " + user[2], "Idempotency-Key": key,
                   "Content-Type": "application/x-www-form-urlencoded"}
        # Some clients walk away after their first try (an app killed mid-request): the
        # completer must finish their keys.
        walk_away = rng.random() < 0.05
        # Some tap twice: a second request on the same key races the first.
        double_tap = rng.random() < 0.05
        # Some send the request once more after their answer (the answer was lost on the way):
        # the replay must be the same bytes.
        resend = rng.random() < 0.05
        attempt = 0
        while not self.abort.is_set():
            attempt += 1
            record.attempts += 1
            port = rng.choice(self.api_ports)
            timeout = rng.uniform(0.05, 0.5) if walk_away else self.request_timeout
            if double_tap and attempt == 1:
                threading.Thread(target=self._send_quietly,
                                 args=(record, rng.choice(self.api_ports), body, headers), daemon=True).start()
            with self.lock:
                self.requests += 1
                self.in_flight += 1
            sent = time.time()
            try:
                if kept is not None:
                    status, response_headers, data = kept.call(port, "POST", record.path, body, headers, timeout)
                else:
                    status, response_headers, data = http_call(port, "POST", record.path, body, headers, timeout)
            except (OSError, http.client.HTTPException):
                status, response_headers, data = None, {}, b""
            finally:
                with self.lock:
                    self.in_flight -= 1
            if not walk_away:  # a walk-away's own short timeout is no error of the system's
                self._note(sent, status, key)
            record.last = time.time()
            record.statuses[status] += 1
            self._ok(sent, status, response_headers.get("idempotent-replayed") == "true")
            self._throttled(sent, status, data, key)
            # 409 (key in flight) and 429 (too many of this user's requests in progress) are
            # "retry later", not answers.
            if status is not None and (200 <= status < 300 or (400 <= status < 500 and status not in (409, 429))):
                record.status = status
                record.body = data
                record.replayed = response_headers.get("idempotent-replayed") == "true"
                if resend:
                    self.abort.wait(rng.uniform(0.0, 1.0))
                    self._send_quietly(record, rng.choice(self.api_ports), body, headers)
                return record
            if walk_away or time.time() - record.first > self.give_up:
                record.gave_up = True
                return record
            # Exponential backoff with full jitter (capped at 2 s), so that clients do not retry in
            # step; Retry-After is not waited out in full, to keep many retries inside a fault.
            base = min(2.0, 0.05 * (2 ** min(attempt, 8)))
            self.abort.wait(rng.uniform(0.02, base))
        return record

    def _send_quietly(self, record, port, body, headers):
        """One more request on a key; a final answer to it is checked like the main one."""
        with self.lock:
            self.requests += 1
        sent = time.time()
        try:
            status, response_headers, data = http_call(port, "POST", record.path, body, headers, self.request_timeout)
        except (OSError, http.client.HTTPException):
            self._note(sent, None, record.key)
            return
        self._note(sent, status, record.key)
        self._ok(sent, status, response_headers.get("idempotent-replayed") == "true")
        self._throttled(sent, status, data, record.key)
        if 200 <= status < 300 or (400 <= status < 500 and status not in (409, 429)):
            with self.lock:
                record.extra.append((status, data, response_headers.get("idempotent-replayed") == "true"))


# ---------------------------------------------------------------------------------------------
# The hostile client


# Every probe of an invalid shape that carries an Idempotency-Key carries one that starts with
# this, so the checker can prove that none of them wrote a row (no key row may contain it).
HOSTILE_PREFIX = "hostile-invalid-"
# The hostile user's own valid keys (its flood of POST /rides).
HOSTILE_FLOOD_PREFIX = "hostile-flood-"
# The hostile client's own loopback address: the API must see it, not HAProxy's, as the client's
# (API_TRUSTED_PROXIES), so that its floods of unknown tokens are throttled for it alone
# (AUTH_FAILURES_PER_MINUTE) while the good clients, on 127.0.0.1, are never; origin_ip names it.
HOSTILE_ADDRESS = "127.0.0.66"
GOOD_ADDRESS = "127.0.0.1"
# The bounds the suite gives its APIs, low so that the hostile floods meet them within a burst.
AUTH_FAILURES_PER_MINUTE = 5
IDEMPOTENCY_MAX_WAITERS_PER_USER = 3
# The body of the API's 429 for an address past AUTH_FAILURES_PER_MINUTE (docs/http-api.md).
AUTH_THROTTLED = b"Too many failed authentications"
# The second request pipelined behind every smuggling shape: an answer to it on the same
# connection would mean the API read it as a request of its own.
PIPELINED = b"GET /healthz HTTP/1.1\r\nHost: rocket-rides\r\n\r\n"
# Methods for the long-method probe: token characters only (RFC 9110 tchar), so the request line
# itself is well formed.
TCHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~"


def parse_responses(data):
    """HTTP/1.1 responses one after another in data: ([(status, headers, body)], rest), where rest
    is what follows the last complete response (bytes that are no complete answer)."""
    out = []
    pos = 0
    while pos < len(data):
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            break
        lines = data[pos:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            break
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        start = end + 4
        if 100 <= status < 200 or status in (204, 304):
            body, pos = b"", start
        elif "content-length" in headers and headers["content-length"].isdigit():
            n = int(headers["content-length"])
            if start + n > len(data):
                break
            body, pos = data[start:start + n], start + n
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body, at = b"", start
            while True:
                line_end = data.find(b"\r\n", at)
                if line_end < 0:
                    return out, data[pos:]
                try:
                    size = int(data[at:line_end].split(b";")[0], 16)
                except ValueError:
                    return out, data[pos:]
                if size == 0:
                    trailer_end = data.find(b"\r\n\r\n", line_end)
                    if trailer_end < 0 and data[line_end:line_end + 4] != b"\r\n\r\n":
                        return out, data[pos:]
                    at = (trailer_end if trailer_end >= 0 else line_end) + 4
                    break
                body += data[line_end + 2:line_end + 2 + size]
                at = line_end + 2 + size + 2
            pos = at
        else:  # delimited by the close
            body, pos = data[start:], len(data)
        if 100 <= status < 200:
            continue  # an interim answer is no answer
        out.append((status, headers, body))
    return out, data[pos:]


def from_api(headers, body):
    """The API answers everything with a JSON body; HAProxy's own error pages are HTML."""
    return headers.get("server", "") == "rocket-rides" or (
        headers.get("content-type", "").startswith("application/json") and body.startswith(b"{"))


class HostileRecord:
    """One hostile probe (one connection, or one request of a flood) and what came back."""

    __slots__ = ("kind", "port", "direct", "sent", "ended", "expected", "strict", "answers", "rest", "closed",
                 "error", "key", "detail", "headers")

    def __init__(self, kind, port, direct, expected, strict, key=None, detail=""):
        self.kind = kind
        self.port = port
        self.direct = direct  # straight to an API (not through HAProxy)
        self.sent = time.time()
        self.ended = None
        self.expected = frozenset(expected)  # statuses docs/http-api.md promises for the first answer
        self.strict = strict  # must be the one answer on its connection, which then closes
        self.answers = []  # (status, from the API, body)
        self.rest = b""  # bytes after the last complete answer
        self.closed = None  # True: the server closed; False: still open at our deadline
        self.error = None  # connection error or timeout before a complete first answer
        self.key = key  # its Idempotency-Key, if it sent one
        self.detail = detail
        self.headers = {}  # the first answer's headers (names in lower case)


class Hostile:
    """A hostile client beside the good ones: threads that send, at random, the probes the API
    defends against (see docs/http-api.md, "Hostile clients"), and record every answer for the checker.
    It uses a user of its own (so it never touches the good users' keys) or no valid token."""

    def __init__(self, ports, direct_ports, token, seed, threads, request_timeout, slow):
        self.ports = ports  # where the good clients go (the APIs, or HAProxy)
        self.direct_ports = direct_ports  # the APIs themselves (equal to ports without HAProxy)
        self.token = token
        self.seed = seed
        self.thread_count = threads
        self.request_timeout = request_timeout
        self.slow = slow
        # The share of 201 rides their rider then cancels (POST /rides/{id}/cancel).
        self.cancel_share = 0.25
        self.stop_new = threading.Event()
        self.abort = threading.Event()
        # Set by the suite while it holds the provider slow (mock_hang, api_kill_in_flight): the
        # hostile client floods then, so its requests hold workers on the provider.
        self.provider_slow = threading.Event()
        self.lock = threading.Lock()
        self.records = []
        self.flood_keys = {}  # key -> params of every valid key the hostile user sent
        self.flood_answers = []  # (key, status, body) of final answers (201/402) to the flood
        self.token_bursts = []  # (APIs it could reach, [records]) of each flood of unknown tokens
        self.waiter_bursts = []  # (the key's first request, [records of its waiters]) of each waiter flood
        self.kinds = collections.Counter()
        self.threads = []
        self.errors = []

    def start(self):
        self.threads = start_threads(self.thread_count, self._run, "hostile")

    def join(self, timeout):
        return join_threads(self.threads, timeout)

    def _run(self, index):
        rng = random.Random("%s-hostile-%d" % (self.seed, index))
        probes = [(self.long_method, 3), (self.smuggle, 6), (self.idle, 1), (self.drip, 2), (self.flood, 1),
                  (self.invalid, 6), (self.token_flood, 1), (self.waiter_flood, 1)]
        try:
            while not self.stop_new.is_set() and not self.abort.is_set():
                if self.provider_slow.is_set() and rng.random() < 0.5:
                    probe = rng.choice([self.flood, self.waiter_flood])
                else:
                    probe = rng.choices([p for p, _ in probes], weights=[w for _, w in probes])[0]
                probe(rng)
                self.abort.wait(rng.uniform(0.0, 0.2))
        except Exception:
            with self.lock:
                self.errors.append(traceback.format_exc())

    def _add(self, record):
        with self.lock:
            self.records.append(record)
            self.kinds[record.kind] += 1

    def _key(self, rng, prefix=HOSTILE_PREFIX):
        return prefix + uuid.UUID(int=rng.getrandbits(128)).hex

    def _auth(self, rng):
        """The hostile user's token, mostly; sometimes none or one that is no token at all."""
        r = rng.random()
        if r < 0.75:
            return "Authorization: Bearer %s\r\n" % self.token, False
        if r < 0.9:
            return "", True
        return "Authorization: Bearer hostile-%s\r\n" % uuid.UUID(int=rng.getrandbits(128)).hex, True

    @staticmethod
    def _unauthenticated(auth):
        """What a request without a valid token may get: 401, and for a token that is no token
        also 429 once this address is past AUTH_FAILURES_PER_MINUTE."""
        return {401, 429} if "Bearer hostile-" in auth else {401}

    # -- the exchange ---------------------------------------------------------------------------

    def exchange(self, record, data, drip=None, read_to_close=False):
        """Sends data on a fresh connection (drip: (rng, seconds) to feed it in small pieces over
        that long), reads the answers, and fills in the record. read_to_close: keep reading until
        the server closes or the deadline, to see any second answer and whether it closes."""
        import socket
        deadline = time.time() + self.request_timeout
        sock = None
        got = b""
        try:
            sock = socket.create_connection(("127.0.0.1", record.port), timeout=self.request_timeout,
                                            source_address=(HOSTILE_ADDRESS, 0))
            record.sent = time.time()
            if drip:
                rng, seconds = drip
                pieces = []
                at = 0
                while at < len(data):
                    n = rng.randint(1, 12)
                    pieces.append(data[at:at + n])
                    at += n
                pause = seconds / max(1, len(pieces))
                for piece in pieces:
                    sock.sendall(piece)
                    time.sleep(pause)
                deadline = time.time() + self.request_timeout
            else:
                sock.sendall(data)
            while True:
                remaining = deadline - time.time()
                if remaining <= 0:
                    record.closed = False
                    break
                sock.settimeout(remaining)
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    record.closed = False
                    break
                if not chunk:
                    record.closed = True
                    break
                got += chunk
                if not read_to_close:
                    answers, _ = parse_responses(got)
                    if answers:
                        break
                else:
                    answers, _ = parse_responses(got)
                    if len(answers) >= 2 and not record.direct:
                        break  # HAProxy answered the pipelined request too (see check_hostile)
                    if answers:
                        # The answer is complete: a closing server closes at once.
                        deadline = min(deadline, time.time() + 2.0 * self.slow)
        except OSError as e:
            record.error = "%s: %s" % (type(e).__name__, e)
        finally:
            if sock is not None:
                sock.close()
            record.ended = time.time()
        answers, rest = parse_responses(got)
        record.answers = [(status, from_api(headers, body), body) for status, headers, body in answers]
        record.headers = answers[0][1] if answers else {}
        record.rest = rest
        if not answers and record.error is None:
            record.error = "no complete answer (%d bytes%s)" % (len(got), ", closed" if record.closed else "")
        self._add(record)
        return record

    def _target(self, rng):
        """Where a probe goes: where the good clients go, and through HAProxy now and then
        straight to an API (only there can one see what the API itself does with a shape)."""
        if self.direct_ports != self.ports and rng.random() < 0.5:
            return rng.choice(self.direct_ports), True
        return rng.choice(self.ports), self.direct_ports == self.ports

    # -- the probes -----------------------------------------------------------------------------

    def long_method(self, rng):
        """A method of 200 to 4000 bytes on a random path: 405 on a route, 404 elsewhere; its
        text must never become a metric label (docs/http-api.md: at most 4,096 series)."""
        method = "".join(rng.choice(TCHARS) for _ in range(rng.randint(200, 4000)))
        routes = ["/rides", "/rides/%d" % rng.randint(1, 10 ** 9), "/healthz", "/readyz", "/"]
        others = ["/metrics", "/%s" % "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-._~/")
                                                     for _ in range(rng.randint(1, 600)))]
        path = rng.choice(routes + others)
        expected = {405} if path in routes else {404}
        if path.startswith("/rides/"):
            expected = {405}
        port, direct = self._target(rng)
        auth, _ = self._auth(rng)
        data = ("%s %s HTTP/1.1\r\nHost: rocket-rides\r\n%sContent-Length: 0\r\n\r\n" % (method, path, auth)).encode()
        self.exchange(HostileRecord("long_method", port, direct, expected, strict=False,
                                    detail="%d-byte method on %s" % (len(method), path[:40])), data)

    def smuggle(self, rng):
        """A framing shape two parsers could read differently, with a request pipelined behind it:
        exactly one answer (the status in docs/http-api.md) and a closed connection."""
        port, direct = self._target(rng)
        shape = rng.choice(["te_gzip", "te_chunked_gzip", "te_and_cl", "te_and_cl_smuggle", "http10_te", "two_hosts",
                            "no_host", "expect_foo", "content_encoding"])
        # HAProxy serves Transfer-Encoding with Content-Length itself (RFC 9112 section 6.3): it
        # drops the Content-Length, forwards the chunked body and closes the client's connection
        # after the answer. The API then gets a valid request, which it serves and, for a valid
        # body, charges: so through HAProxy this shape sends a valid key of the hostile user's
        # own (its row is checked like the flood's), not an invalid-shape one.
        normalized = shape.startswith("te_and_cl") and not direct
        key = self._key(rng, HOSTILE_FLOOD_PREFIX if normalized else HOSTILE_PREFIX)
        auth, anonymous = self._auth(rng)
        if normalized and anonymous:
            auth = "Authorization: Bearer %s\r\n" % self.token
        form = urllib.parse.urlencode([("origin_lat", "1.5"), ("origin_lon", "2.5"), ("target_lat", "3.5"),
                                       ("target_lon", "4.5")]).encode()
        common = ("Host: rocket-rides\r\n%sIdempotency-Key: %s\r\n"
                  "Content-Type: application/x-www-form-urlencoded\r\n" % (auth, key)).encode()
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(form), form)
        shapes = {
            "te_gzip": (b"POST /rides HTTP/1.1\r\n" + common + b"Transfer-Encoding: gzip\r\n\r\n" + form, 400),
            "te_chunked_gzip": (b"POST /rides HTTP/1.1\r\n" + common + b"Transfer-Encoding: chunked, gzip\r\n\r\n"
                                + chunked, 400),
            "te_and_cl": (b"POST /rides HTTP/1.1\r\n" + common + b"Content-Length: %d\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n" % len(chunked) + chunked, 400),
            "te_and_cl_smuggle": (b"POST /rides HTTP/1.1\r\n" + common + b"Content-Length: %d\r\n"
                                  b"Transfer-Encoding: chunked\r\n\r\n" % (5 + len(PIPELINED)) + b"0\r\n\r\n", 400),
            "http10_te": (b"POST /rides HTTP/1.0\r\n" + common + b"Transfer-Encoding: chunked\r\n\r\n" + chunked, 400),
            "two_hosts": (b"GET /rides HTTP/1.1\r\nHost: rocket-rides\r\nHost: other.example\r\n"
                          + auth.encode() + b"\r\n", 400),
            "no_host": (b"POST /rides HTTP/1.1\r\n" + common.replace(b"Host: rocket-rides\r\n", b"")
                        + b"Content-Length: %d\r\n\r\n" % len(form) + form, 400),
            "expect_foo": (b"POST /rides HTTP/1.1\r\n" + common + b"Expect: foo\r\nContent-Length: %d\r\n\r\n"
                           % len(form) + form, 417),
            "content_encoding": (b"POST /rides HTTP/1.1\r\n" + common + b"Content-Encoding: gzip\r\n"
                                 b"Content-Length: %d\r\n\r\n" % len(form) + form, 415),
        }
        data, status = shapes[shape]
        # Straight to an API: exactly the status in docs/http-api.md, one answer, closed. Through HAProxy,
        # which frames requests itself: HAProxy refuses the framing shapes itself (400, HTML) or
        # passes a shape it normalized (TE with CL: it drops the CL), so the API answers a 4xx of
        # the request it got; HAProxy keeps the client's connection and answers the pipelined
        # request on a fresh connection to an API (see check_hostile).
        expected = {status} if direct else set(range(400, 500))
        if normalized:
            with self.lock:
                self.flood_keys[key] = form
            expected |= {201, 402, 409, 429, 503}
        record = self.exchange(HostileRecord("smuggle", port, direct, expected, strict=True, key=key,
                                             detail=shape + (" (normalized by HAProxy)" if normalized else "")),
                               data + PIPELINED, read_to_close=True)
        if normalized and record.answers and record.answers[0][0] in (201, 402):
            with self.lock:
                self.flood_answers.append((key, record.answers[0][0], record.answers[0][2]))

    def idle(self, rng):
        """A few dozen connections held open (some silent, some with half a request head) for a
        few seconds, then each request completed: 200 or a closed connection (one the API may
        have evicted to make room), never anything else."""
        import socket
        count = rng.randint(12, 32)
        hold = rng.uniform(1.0, 5.0)
        held = []
        for _ in range(count):
            port, direct = self._target(rng)
            record = HostileRecord("idle", port, direct, {200}, strict=False, detail="held %.1fs" % hold)
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=self.request_timeout)
            except OSError as e:
                record.error = "%s: %s" % (type(e).__name__, e)
                record.ended = time.time()
                self._add(record)
                continue
            half = rng.random() < 0.5
            if half:
                try:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: rocket-rides\r\n")
                except OSError:
                    pass
            held.append((sock, record, half))
        self.abort.wait(hold)
        for sock, record, half in held:
            got = b""
            try:
                sock.sendall(b"\r\n" if half else b"GET /healthz HTTP/1.1\r\nHost: rocket-rides\r\n\r\n")
                sock.settimeout(self.request_timeout)
                while not parse_responses(got)[0]:
                    chunk = sock.recv(65536)
                    if not chunk:
                        record.closed = True
                        break
                    got += chunk
            except OSError as e:
                record.error = "%s: %s" % (type(e).__name__, e)
            finally:
                sock.close()
            record.ended = time.time()
            answers, record.rest = parse_responses(got)
            record.answers = [(s, from_api(h, b), b) for s, h, b in answers]
            if not answers:
                # Closed while held (evicted, or HAProxy's request timeout): allowed, not counted.
                record.detail += ", closed before an answer"
            self._add(record)

    def drip(self, rng):
        """A request head fed a few bytes at a time over a few seconds (within HAProxy's 10 s for a
        head and the API's 30 s for a request): answered like any other."""
        auth, anonymous = self._auth(rng)
        if rng.random() < 0.5:
            data = ("GET /rides?limit=%d HTTP/1.1\r\nHost: rocket-rides\r\n%sConnection: close\r\n\r\n"
                    % (rng.randint(1, 5), auth)).encode()
            # 429 too: another hostile thread's flood may hold all of this user's places in
            # progress (API_MAX_IN_FLIGHT_PER_USER) while the head drips in.
            expected = self._unauthenticated(auth) if anonymous else {200, 429}
        else:
            key = self._key(rng)
            data = ("POST /rides HTTP/1.1\r\nHost: rocket-rides\r\n%sIdempotency-Key: %s\r\n"
                    "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
                    % (auth, key)).encode()
            # No parameters: 422; without a token 401, or 422 still (a token of the wrong user
            # is looked up only after the request is valid).
            expected = self._unauthenticated(auth) | {422} if anonymous else {422}
        port, direct = self._target(rng)
        seconds = rng.uniform(1.0, 4.0)
        self.exchange(HostileRecord("drip", port, direct, expected, strict=False,
                                    detail="%.1fs for %d bytes" % (seconds, len(data))), data, drip=(rng, seconds))

    def flood(self, rng):
        """Concurrent POST /rides from the hostile user's own token: a few keys, some sent by
        several requests at once. Only 201, 402, 409, 429 or 503."""
        keys = []
        for _ in range(rng.randint(4, 10)):
            key = self._key(rng, HOSTILE_FLOOD_PREFIX)
            params = random_ride_params(rng)
            with self.lock:
                self.flood_keys[key] = params
            keys.extend([(key, params)] * rng.choice([1, 1, 2, 3]))
        threads = []
        for key, params in keys:
            body = urllib.parse.urlencode(params)
            data = ("POST /rides HTTP/1.1\r\nHost: rocket-rides\r\nAuthorization: Bearer %s\r\n"
                    "Idempotency-Key: %s\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    "Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (self.token, key, len(body), body)).encode()
            port = rng.choice(self.ports)
            record = HostileRecord("flood", port, self.direct_ports == self.ports, {201, 402, 409, 429, 503},
                                   strict=False, key=key)
            t = threading.Thread(target=self._flood_one, args=(record, data), daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join(self.request_timeout + 10)

    def _flood_one(self, record, data):
        self.exchange(record, data)
        if record.answers and record.answers[0][0] in (201, 402):
            with self.lock:
                self.flood_answers.append((record.key, record.answers[0][0], record.answers[0][2]))

    def token_flood(self, rng):
        """Unknown bearer tokens one after another, more than AUTH_FAILURES_PER_MINUTE allows this
        address (the suite gives the APIs a low one): past it 429 with Retry-After, and never more
        401s than the bound lets through (checked in check_hostile, per burst)."""
        port, direct = self._target(rng)
        apis = 1 if direct else len(self.direct_ports)
        records = []
        for i in range((2 * AUTH_FAILURES_PER_MINUTE + 5) * apis):
            if self.abort.is_set():
                break
            # A token of the real form ("rr_" and 64 hex digits, common/auth/tokens.cpp), which only
            # the database can refuse: one of another form is refused without a lookup.
            token = "rr_%064x" % rng.getrandbits(256)
            data = ("GET /rides HTTP/1.1\r\nHost: rocket-rides\r\nAuthorization: Bearer %s\r\n"
                    "Connection: close\r\n\r\n" % token).encode()
            records.append(self.exchange(HostileRecord("token_flood", port, direct, {401, 429}, strict=False,
                                                       detail="#%d" % i), data))
        with self.lock:
            self.token_bursts.append((apis, records))

    def waiter_flood(self, rng):
        """One new key of the hostile user, then, while it is in flight, a burst of requests for it
        with Prefer: wait, straight to the API that runs it: at most IDEMPOTENCY_MAX_WAITERS_PER_USER
        of them wait, the rest get 429 (checked in check_hostile). Only 201, 402, 409, 429 or 503."""
        port = rng.choice(self.direct_ports)
        key = self._key(rng, HOSTILE_FLOOD_PREFIX)
        params = random_ride_params(rng)
        with self.lock:
            self.flood_keys[key] = params
        body = urllib.parse.urlencode(params)

        def request(wait):
            return ("POST /rides HTTP/1.1\r\nHost: rocket-rides\r\nAuthorization: Bearer %s\r\n"
                    "Idempotency-Key: %s\r\n%sContent-Type: application/x-www-form-urlencoded\r\n"
                    "Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (
                        self.token, key, "Prefer: wait=%d\r\n" % wait if wait else "", len(body), body)).encode()

        expected = {201, 402, 409, 429, 503}
        first = HostileRecord("waiter_flood", port, True, expected, strict=False, key=key, detail="first")
        threads = [threading.Thread(target=self._flood_one, args=(first, request(0)), daemon=True)]
        threads[0].start()
        # Soon enough that the key is mostly still in flight (a charge takes tens of milliseconds).
        self.abort.wait(0.03)
        waiters = [HostileRecord("waiter_flood", port, True, expected, strict=False, key=key, detail="waiter")
                   for _ in range(IDEMPOTENCY_MAX_WAITERS_PER_USER + 6)]
        for record in waiters:
            t = threading.Thread(target=self._flood_one, args=(record, request(2)), daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join(self.request_timeout + 10)
        with self.lock:
            self.waiter_bursts.append((first, waiters))

    def invalid(self, rng):
        """A request of a shape the API refuses (400, or 422 where docs/http-api.md says so), with a key
        of HOSTILE_PREFIX wherever it sends one: none of them may write a row."""
        auth, anonymous = self._auth(rng)
        key = self._key(rng)
        good = [("origin_lat", "1.5"), ("origin_lon", "2.5"), ("target_lat", "3.5"), ("target_lon", "4.5")]
        form = urllib.parse.urlencode(good)
        good_json = '"origin_lat":1.5,"origin_lon":2.5,"target_lat":3.5'
        cases = {
            # The key: blank, quoted blank, comma list (what a proxy makes of two), two headers,
            # too short, too long, not ASCII.
            "key_blank": ([("Idempotency-Key", "")], "form", form, 400),
            "key_spaces": ([("Idempotency-Key", "   ")], "form", form, 400),
            "key_quoted_blank": ([("Idempotency-Key", '"  "')], "form", form, 400),
            "key_quoted_empty": ([("Idempotency-Key", '""')], "form", form, 400),
            "key_comma_list": ([("Idempotency-Key", "%s, %s" % (key, self._key(rng)))], "form", form, 400),
            "key_two_headers": ([("Idempotency-Key", key), ("Idempotency-Key", self._key(rng))], "form", form, 400),
            "key_short": ([("Idempotency-Key", HOSTILE_PREFIX + "x")], "form", form, 400),
            "key_long": ([("Idempotency-Key", key + "x" * 256)], "form", form, 400),
            "key_not_ascii": ([("Idempotency-Key", key + "\u00e9")], "form", form, 400),
            # The body.
            "json_bad_utf8": ([("Idempotency-Key", key)], "json",
                              b'{' + good_json.encode() + b',"target_lon":"\xff\xfe"}', 400),
            "json_escaped_surrogate": ([("Idempotency-Key", key)], "json",
                                       '{%s,"target_lon":"\\ud800"}' % good_json, 400),
            "json_duplicate_key": ([("Idempotency-Key", key)], "json",
                                   '{%s,"target_lon":4.5,"target_lon":4.6}' % good_json, 400),
            "json_nested_duplicate": ([("Idempotency-Key", key)], "json",
                                      '{%s,"target_lon":4.5,"x":{"a":1,"a":2}}' % good_json, 400),
            "json_malformed": ([("Idempotency-Key", key)], "json", '{%s,"target_lon":4.5' % good_json, 400),
            "json_not_object": ([("Idempotency-Key", key)], "json", '[%s]' % good_json, 400),
            "form_repeated_field": ([("Idempotency-Key", key)], "form", form + "&origin_lat=1.6", 422),
            "form_exponent": ([("Idempotency-Key", key)], "form", form.replace("1.5", "1e1"), 422),
            "form_out_of_range": ([("Idempotency-Key", key)], "form", form.replace("1.5", "91"), 422),
            "form_missing": ([("Idempotency-Key", key)], "form", form.rpartition("&")[0], 422),
            # The query of GET /rides.
            "limit_repeated": (None, "/rides?limit=1&limit=2", None, 400),
            "limit_invalid": (None, "/rides?limit=%s" % rng.choice(["x", "-1", "1.5", "", "0x10"]), None, 400),
            "cursor_repeated": (None, "/rides?cursor=1&cursor=2", None, 400),
        }
        case = rng.choice(sorted(cases))
        headers, kind, body, status = cases[case]
        expected = {status} | self._unauthenticated(auth) if anonymous else {status}
        if headers is None:
            data = ("GET %s HTTP/1.1\r\nHost: rocket-rides\r\n%sConnection: close\r\n\r\n" % (kind, auth)).encode()
            sent_key = None
        else:
            if isinstance(body, str):
                body = body.encode()
            lines = "".join("%s: %s\r\n" % h for h in headers)
            content_type = "application/json" if kind == "json" else "application/x-www-form-urlencoded"
            data = ("POST /rides HTTP/1.1\r\nHost: rocket-rides\r\n%s%sContent-Type: %s\r\nContent-Length: %d\r\n"
                    "Connection: close\r\n\r\n" % (auth, lines, content_type, len(body))).encode("utf-8") + body
            sent_key = key
        port, direct = self._target(rng)
        self.exchange(HostileRecord("invalid", port, direct, expected, strict=False, key=sent_key, detail=case), data)


# ---------------------------------------------------------------------------------------------
# The suite


class Suite:
    def __init__(self, args):
        self.args = args
        self.profile = PROFILES[args.profile]
        self.seed = args.seed
        self.rng = random.Random("%s-faults" % self.seed)
        self.bin_dir = os.path.abspath(args.bin_dir)
        self.work_dir = tempfile.mkdtemp(prefix="rocket-rides-fault.")
        os.chmod(self.work_dir, 0o755)
        self.log_dir = os.path.join(self.work_dir, "logs")
        os.makedirs(self.log_dir)
        # The HA profiles run over scripts/cluster.sh too (HAProxy, PgBouncer, members started by
        # the script), with PostgreSQL under Patroni instead of one server.
        self.ha = self.profile.get("topology") == "ha"
        self.cluster = self.profile.get("topology") in ("cluster", "ha")
        self.monitor = None
        self.failover_events = []  # (kind, fault time, old leader, new leader or None, new leader seen)
        self.ha_warnings = []
        self.provider_key_secret = None
        if self.ha:
            self.cluster_dir = os.path.join(self.work_dir, "cluster")
            self.servers = HAServers(self.cluster_dir, 1.0)
        elif self.cluster:
            # scripts/cluster.sh's PostgreSQL is durable, whatever --fast says.
            self.cluster_dir = os.path.join(self.work_dir, "cluster")
            self.servers = Servers(self.cluster_dir, False, adopt=True)
        else:
            self.servers = Servers(self.work_dir, self.profile["fast"] if args.fast is None else args.fast,
                                   sentinel=self.profile.get("redis") == "sentinel")
        self.pgbouncer = None
        self.haproxy = None
        self.front_port = None
        self.rolling_windows = []  # (start, end) of each rolling restart
        self.apis = []
        self.enqueuers = []
        self.completers = []
        self.mock = None
        self.mock_port = None
        self.traffic = None
        self.hostile = None
        self.faults = collections.Counter()
        # (kind, start, end) of every fault injected, for the hostile client's checks.
        self.fault_windows = []
        self.slow = 1.0

    # -- set-up ---------------------------------------------------------------------------------

    def binary(self, name, required=True):
        path = os.path.join(self.bin_dir, name)
        if not os.access(path, os.X_OK):
            if required:
                raise HarnessError("%s not found in %s (build it first)" % (name, self.bin_dir))
            return None
        return path

    def base_env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DATABASE_", "REDIS_", "STRIPE_", "COMPLETER_", "ENQUEUER_", "REAPER_",
                                    "IDEMPOTENCY_", "MOCK_", "API_", "PORT", "METRICS_", "LOCAL_SERVERS"))}
        env.update({"DATABASE_URL": self.servers.database_url, "REDIS_URL": self.servers.redis_url,
                    "STRIPE_API_KEY": STRIPE_KEY, "STRIPE_API_BASE": "http://127.0.0.1:%d" % self.mock_port,
                    "STRIPE_TIMEOUT": "1", "IDEMPOTENCY_KEY_LOCK_TIMEOUT": "3",
                    "AUTH_FAILURES_PER_MINUTE": str(AUTH_FAILURES_PER_MINUTE),
                    "IDEMPOTENCY_MAX_WAITERS_PER_USER": str(IDEMPOTENCY_MAX_WAITERS_PER_USER)})
        if self.servers.sentinel:
            env.update({"REDIS_SENTINELS": self.servers.redis_sentinels,
                        "REDIS_SENTINEL_MASTER": self.servers.redis_sentinel_master, "REDIS_MIN_REPLICAS": "1",
                        "ENQUEUER_MAX_BACKOFF": "2"})
        # Sanitizer reports at exit are not this suite's subject; kill -9 leaves none anyway.
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        if "detect_leaks=1" in env["ASAN_OPTIONS"]:
            env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0")
        return env

    def setup_cluster(self):
        """The cluster script starts every member; the suite keeps handles on them."""
        api = self.binary("rocket-rides-api")
        for name in ("rocket-rides-stripe-mock", "rocket-rides-enqueuer", "rocket-rides-completer",
                     "rocket-rides-reaper"):
            self.binary(name)
        if is_sanitized(api):
            self.slow = 2.0
            log("sanitized binaries: timeouts doubled")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DATABASE_", "REDIS_", "STRIPE_", "COMPLETER_", "ENQUEUER_", "REAPER_",
                                    "IDEMPOTENCY_", "MOCK_", "API_", "PORT", "METRICS_", "LOCAL_SERVERS",
                                    "SHUTDOWN_", "RESPONSE_CACHE_", "TOKEN_CACHE_", "LISTEN_"))}
        # The same settings the other profiles give their daemons; cluster.sh records them and
        # starts every member again with them.
        env.update({"STRIPE_API_KEY": STRIPE_KEY, "STRIPE_TIMEOUT": "1", "IDEMPOTENCY_KEY_LOCK_TIMEOUT": "3",
                    "AUTH_FAILURES_PER_MINUTE": str(AUTH_FAILURES_PER_MINUTE),
                    "IDEMPOTENCY_MAX_WAITERS_PER_USER": str(IDEMPOTENCY_MAX_WAITERS_PER_USER),
                    "ENQUEUER_IDLE_SLEEP": "1", "ENQUEUER_MAX_BACKOFF": "2", "COMPLETER_MIN_AGE": "2",
                    "COMPLETER_LAST_RUN_THRESHOLD": "1", "COMPLETER_IDLE_SLEEP": "1",
                    "COMPLETER_MAX_BACKOFF": "2", "SHUTDOWN_TIMEOUT": "5", "SHUTDOWN_DRAIN": "2",
                    "MOCK_SEED": str(self.seed % (2 ** 62))})
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        if "detect_leaks=1" in env["ASAN_OPTIONS"]:
            env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0")
        # A guardian outside our process tree, as for the servers of the other profiles: the
        # members run in sessions of their own, so if this harness is killed outright, it stops
        # them all. It does nothing once the directory is gone.
        subprocess.run(
            ["setsid", "-f", "sh", "-c",
             'while kill -0 "$1" 2>/dev/null; do sleep 1; done; '
             '[ -f "$3/cluster.conf" ] && "$2" stop "$3" >/dev/null 2>&1; exit 0',
             "guardian", str(os.getpid()), CLUSTER, self.cluster_dir],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        argv = [CLUSTER, "start", self.cluster_dir, "--bin-dir", self.bin_dir]
        if self.ha:
            # Each node's etcd, Patroni and PostgreSQL in a namespace of its own, linked to a bridge
            # in ours (run_in_netns made it; the script refuses the machine's own namespace).
            argv += ["--ha", "--netns", self.args.netns_prefix] + (["--async"] if self.args.async_replicas else [])
        log("starting the cluster in %s (%s)" % (self.cluster_dir, " ".join(["scripts/cluster.sh"] + argv[1:])))
        self.cluster_started = True
        result = run(argv, env=env, timeout=(600 if self.ha else 300) * self.slow, check=False)
        if result.returncode != 0:
            raise HarnessError("scripts/cluster.sh start failed (exit %d): %s" % (
                result.returncode, result.stderr.decode(errors="replace")[-3000:]))
        exports = {}
        for line in result.stdout.decode().splitlines():
            if line.startswith("export "):
                name, _, value = line[len("export "):].partition("=")
                exports[name] = value
        self.cluster_env = exports
        if self.ha:
            self.servers.slow = self.slow
            self.servers.configure(exports)
            self.provider_key_secret = self.app_setting("PROVIDER_KEY_SECRET")
        else:
            self.servers.adopt(exports["DIRECT_DATABASE_URL"], exports["REDIS_URL"])
        self.mock_port = int(exports["STRIPE_MOCK_PORT"])
        self.front_port = int(exports["HAPROXY_PORT"])
        self.stats_url = exports.get("HAPROXY_STATS_URL")
        if self.ha:
            log("HAProxy on %d (APIs %s, %s), PgBouncer on %s, Patroni nodes %s, Redis on %d, provider keys %s" % (
                self.front_port, exports["API1_ADDRESS"], exports["API2_ADDRESS"], exports.get("PGBOUNCER_PORT"),
                ", ".join("%s=%s:%d" % ((n,) + self.servers.nodes[n]["pg"]) for n in sorted(self.servers.nodes)),
                self.servers.redis_port, "derived (PROVIDER_KEY_SECRET)" if self.provider_key_secret else "random"))
        else:
            log("HAProxy on %d (APIs %s, %s), PgBouncer on %d, PostgreSQL on %d, Redis on %d" % (
                self.front_port, exports["API1_ADDRESS"], exports["API2_ADDRESS"], int(exports["PGBOUNCER_PORT"]),
                self.servers.pg_port, self.servers.redis_port))

        def member(name, port=None):
            return ClusterMember(self.cluster_dir, name, self.slow, port)
        self.mock = member("stripe-mock", self.mock_port)
        self.apis = [member("api%d" % i, int(exports["API%d_ADDRESS" % i].rpartition(":")[2])) for i in (1, 2)]
        self.enqueuers = [member("enqueuer1"), member("enqueuer2")]
        self.completers = [member("completer1"), member("completer2")]
        self.pgbouncer = member("pgbouncer")
        self.haproxy = member("haproxy")

        user_env = dict(env, DATABASE_URL=exports["DATABASE_URL"], DATABASE_PREPARED_STATEMENTS="off")
        if self.ha:
            # Every setting the daemons run with (PROVIDER_KEY_SECRET too), as the script recorded them.
            user_env.update(self.app_settings())
            user_env["DATABASE_URL"] = exports["DATABASE_URL"]
        self.create_users(api, user_env)
        if self.ha:
            leader = self.wait_ha_healthy()
            self.monitor = LeaderMonitor(self.servers)
            self.monitor.start()
            log("Patroni cluster healthy, %s leads: %s" % (leader, self.servers.members()))

    def app_settings(self):
        """DIR/app.env: the daemons' settings as scripts/cluster.sh recorded them (K=V lines)."""
        settings = {}
        try:
            with open(os.path.join(self.cluster_dir, "app.env")) as f:
                for line in f:
                    name, sep, value = line.rstrip("\n").partition("=")
                    if sep and name:
                        settings[name] = value
        except OSError:
            pass
        return settings

    def app_setting(self, name):
        return self.app_settings().get(name) or None

    def create_users(self, api, env):
        self.users = []
        customers = [("cus_fault_a", False), ("cus_fault_b", False), ("cus_fault_c", False),
                     ("cus_fault_declined", True)]
        for i, (customer, declines) in enumerate(customers):
            email = "fault-%d-%d@example.com" % (i, self.seed % 100000)
            out = run([api, "user", "create", "--email", email, "--stripe-customer", customer], env=env,
                      timeout=60 * self.slow).stdout.decode().strip().splitlines()
            if not out:
                raise HarnessError("user create printed no token")
            self.users.append((email, customer, out[-1].strip(), declines))
        # The hostile client's own user: its keys can never be a good client's.
        email = "fault-hostile-%d@example.com" % (self.seed % 100000)
        out = run([api, "user", "create", "--email", email, "--stripe-customer", "cus_fault_hostile"], env=env,
                  timeout=60 * self.slow).stdout.decode().strip().splitlines()
        if not out:
            raise HarnessError("user create printed no token")
        self.hostile_user = (email, "cus_fault_hostile", out[-1].strip())
        self.user_ids = {row["email"]: row["id"] for row in self.servers.psql_json("SELECT id, email FROM users")}

    def setup(self):
        if self.cluster:
            return self.setup_cluster()
        api = self.binary("rocket-rides-api")
        mock = self.binary("rocket-rides-stripe-mock")
        missing_ok = self.args.allow_missing_daemons
        enqueuer = self.binary("rocket-rides-enqueuer", required=not missing_ok)
        completer = self.binary("rocket-rides-completer", required=not missing_ok)
        if is_sanitized(api):
            self.slow = 2.0
            log("sanitized binaries: timeouts doubled")

        log("starting PostgreSQL and Redis in %s" % self.servers.dir)
        self.servers.start()
        log("PostgreSQL on %d, Redis on %d" % (self.servers.pg_port, self.servers.redis_port))

        self.mock_port = free_port()
        env = self.base_env()
        run([api, "migrate"], env=env, timeout=120 * self.slow)

        mock_env = dict(env, PORT=str(self.mock_port), MOCK_SEED=str(self.seed % (2 ** 62)))
        self.mock = Daemon("stripe-mock", [mock], mock_env, self.log_dir)
        self.mock.start()
        self.wait_http(self.mock_port, "/_mock/stats", self.mock)

        self.create_users(api, env)

        for i in range(2):
            port = free_port()
            d = Daemon("api-%d" % (i + 1), [api], dict(env, PORT=str(port), SHUTDOWN_TIMEOUT="5"), self.log_dir)
            d.port = port
            d.start()
            self.apis.append(d)
        for d in self.apis:
            self.wait_http(d.port, "/healthz", d)

        daemon_env = dict(env, ENQUEUER_IDLE_SLEEP="1", ENQUEUER_MAX_BACKOFF="2", COMPLETER_MIN_AGE="2",
                          COMPLETER_LAST_RUN_THRESHOLD="1", COMPLETER_IDLE_SLEEP="1", COMPLETER_MAX_BACKOFF="2",
                          SHUTDOWN_TIMEOUT="5")
        if enqueuer:
            for i in range(2):
                d = Daemon("enqueuer-%d" % (i + 1), [enqueuer], daemon_env, self.log_dir)
                d.start()
                self.enqueuers.append(d)
        else:
            log("WARNING: rocket-rides-enqueuer missing: enqueuer faults and invariant 3 are skipped")
        if completer:
            for i in range(2):
                d = Daemon("completer-%d" % (i + 1), [completer], daemon_env, self.log_dir)
                d.start()
                self.completers.append(d)
        else:
            log("WARNING: rocket-rides-completer missing: completer faults are skipped")
        time.sleep(0.5)
        for d in self.enqueuers + self.completers:
            if not d.alive():
                raise HarnessError("%s exited at start (see %s)" % (d.name, d.log_path))

    def wait_http(self, port, path, daemon, timeout=30.0):
        deadline = time.time() + timeout * self.slow
        while time.time() < deadline:
            if daemon is not None and not daemon.alive():
                raise HarnessError("%s exited at start (see %s)" % (daemon.name, daemon.log_path))
            try:
                status, _, _ = http_call(port, "GET", path, timeout=2)
                if status == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        raise HarnessError("%s did not answer %s on port %d" % (daemon.name if daemon else "?", path, port))

    def mock_config(self, **settings):
        body = json.dumps(settings)
        for _ in range(50):
            try:
                status, _, data = http_call(self.mock_port, "POST", "/_mock/config", body,
                                            {"Content-Type": "application/json"}, timeout=5)
                if status == 200:
                    return
                raise HarnessError("mock config %s: %d %s" % (body, status, data[:200]))
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
        raise HarnessError("mock config %s failed" % body)

    # -- faults ---------------------------------------------------------------------------------

    def available_kinds(self):
        if self.ha:
            if self.profile.get("plan"):
                return sorted(set(self.profile["plan"]))
            return list(HA_FAULT_KINDS) + list(self.profile.get("app_kinds", ()))
        kinds = list(FAULT_KINDS) + (list(CLUSTER_FAULT_KINDS) if self.cluster else [])
        if not self.enqueuers:
            kinds.remove("enqueuer_kill")
        if not self.completers:
            kinds.remove("completer_kill")
        if self.servers.sentinel:
            kinds[kinds.index("redis_restart")] = "redis_failover"
        return kinds

    def inject(self, kind):
        start = time.time()
        try:
            self._inject(kind)
        finally:
            if self.hostile is not None:
                self.hostile.provider_slow.clear()
            self.fault_windows.append((kind, start, time.time()))

    def _inject(self, kind):
        rng = self.rng
        self.faults[kind] += 1
        if kind in HA_FAULT_KINDS:
            self.inject_ha(kind)
        elif kind in ("api_kill", "api_kill_in_flight"):
            api = rng.choice(self.apis)
            if kind == "api_kill_in_flight":
                # Charges take most of STRIPE_TIMEOUT: many are in flight when the process dies,
                # and the provider records them after it is gone.
                self.mock_config(latency_ms=rng.randint(500, 900))
                self.provider_slow(True)
                time.sleep(rng.uniform(0.6, 1.5))
            else:
                time.sleep(rng.uniform(0.0, 1.0))
            log("fault: kill -9 %s (pid %d) with %d client requests in flight" % (
                api.name, api.proc.pid, self.traffic.in_flight))
            api.kill9()
            if kind == "api_kill_in_flight":
                time.sleep(rng.uniform(0.2, 1.0))
                self.mock_config(latency_ms=0)
                self.provider_slow(False)
            time.sleep(rng.uniform(0.3, 2.0))
            api.start()  # in the cluster: returns once HAProxy has it UP again
            self.wait_http(api.port, "/healthz", api)
        elif kind == "pgbouncer_restart":
            down = rng.uniform(0.5, 3.0)
            if rng.random() < 0.5:
                log("fault: kill -9 PgBouncer (pid %d), down %.1fs" % (self.pgbouncer.proc.pid, down))
                self.pgbouncer.kill9()
            else:
                log("fault: PgBouncer safe shutdown (SIGINT), down %.1fs" % down)
                self.pgbouncer.stop()
            time.sleep(down)
            self.pgbouncer.start()
        elif kind == "rolling_restart":
            self.rolling_restart()
        elif kind == "pg_restart":
            down = rng.uniform(1.0, 4.0)
            log("fault: PostgreSQL fast stop for %.1fs" % down)
            self.servers.pg_stop()
            time.sleep(down)
            self.servers.pg_start()
        elif kind == "redis_failover":
            self.servers.redis_failover(rng)
        elif kind == "redis_restart":
            down = rng.uniform(2.0, 5.0)
            log("fault: Redis stopped for %.1fs" % down)
            self.servers.redis_stop()
            time.sleep(down)
            self.servers.redis_start()
        elif kind in ("mock_fail", "mock_hang", "mock_drop"):
            length = rng.uniform(2.0, 5.0)
            if kind == "mock_fail":
                setting = dict(failure_rate=round(rng.uniform(0.3, 0.9), 2))
            elif kind == "mock_hang":
                setting = dict(latency_ms=rng.randint(1200, 2500))
            else:
                setting = dict(drop_rate=round(rng.uniform(0.3, 0.9), 2))
            log("fault: provider %s for %.1fs" % (json.dumps(setting), length))
            self.mock_config(**setting)
            self.provider_slow(kind == "mock_hang")
            time.sleep(length)
            self.mock_config(failure_rate=0, latency_ms=0, drop_rate=0)
            self.provider_slow(False)
        elif kind in ("enqueuer_kill", "completer_kill"):
            group = self.enqueuers if kind == "enqueuer_kill" else self.completers
            d = rng.choice(group)
            log("fault: kill -9 %s (pid %d)" % (d.name, d.proc.pid))
            d.kill9()
            time.sleep(rng.uniform(0.3, 2.0))
            d.start()
        else:
            raise AssertionError(kind)

    # -- the Patroni cluster's faults -----------------------------------------------------------

    def cluster_script(self, *args, timeout=120):
        result = run([CLUSTER] + list(args), timeout=timeout * self.slow, check=False)
        if result.returncode != 0:
            raise HarnessError("scripts/cluster.sh %s failed (exit %d): %s" % (
                " ".join(args), result.returncode, result.stderr.decode(errors="replace")[-2000:]))
        return result.stdout.decode()

    def ha_healthy(self):
        """(leader, view) if the cluster is whole again: one leader, running, that scripts/cluster.sh
        names too, every other node streaming from it (the leader's pg_stat_replication), and
        (not with --async-replicas) Patroni's synchronous standby among them, streaming
        synchronously; else (None, view). Patroni's own view says "running" for a standby that is
        not streaming yet, and a fault of the next leader while one is still being rebuilt would
        find no standby to promote."""
        view = self.servers.members()
        leaders = [n for n, (role, state) in view.items() if role == "leader" and state == "running"]
        if len(leaders) != 1 or self.servers.leader() != leaders[0]:
            return None, view
        leader = leaders[0]
        try:
            rows = self.servers.psql_node(leader, "SELECT application_name, state, sync_state FROM pg_stat_replication",
                                          timeout=10)
        except (HarnessError, subprocess.TimeoutExpired):
            return None, view
        streaming = {}
        for line in rows.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1] == "streaming":
                streaming[parts[0]] = parts[2]
        replication = dict(view, replication=streaming)
        others = set(self.servers.nodes) - {leader}
        if not others <= set(streaming):
            return None, replication
        # The synchronous standby as Patroni designates it (its /sync key: the only node it will
        # promote), streaming synchronously. PostgreSQL alone is not enough: while the leader has
        # none designated (a standby just restarted), synchronous_standby_names is '*' and
        # pg_stat_replication calls the first standby "sync", yet Patroni has no candidate and a
        # leader fault then finds no failover ("members list is empty").
        if not self.args.async_replicas and not any(
                view.get(n, (None, None))[0] == "sync_standby" and streaming.get(n) == "sync" for n in others):
            return None, replication
        return leader, replication

    def wait_ha_healthy(self, timeout=120):
        """Until the cluster is whole again (see ha_healthy); a warning, and a finding, if not
        within the bound. Returns the leader (or None)."""
        deadline = time.time() + timeout * self.slow
        started = time.time()
        view = {}
        while time.time() < deadline:
            leader, view = self.ha_healthy()
            if leader is not None:
                if time.time() - started > 1.0:
                    log("cluster healthy after %.1fs: %s" % (time.time() - started, view))
                return leader
            time.sleep(0.5)
        text = "cluster not whole %.0fs after a fault (a leader, every other node streaming from it, one "\
               "synchronously): %s" % (timeout * self.slow, view)
        log("WARNING: " + text)
        self.ha_warnings.append(text)
        return self.servers.leader()

    def wait_leader_change(self, old, since, timeout=60, or_recovered=False):
        """Until a node other than `old` leads; (that node, the time it was first seen), or
        (None, None). or_recovered: also stop, without a finding, once the cluster is whole again
        under `old`."""
        deadline = time.time() + timeout * self.slow
        while time.time() < deadline:
            leader = self.servers.leader()
            if or_recovered and leader == old and time.time() - since > 5.0 and self.ha_healthy()[0] == old:
                log("no failover: %s recovered in place and leads a whole cluster again after %.1fs" % (
                    old, time.time() - since))
                return None, None
            if leader is not None and leader != old:
                self.monitor.note(leader)
                seen = next((t for t, _, new in self.monitor.changes() if t >= since and new != old), time.time())
                log("failover: %s leads %.1fs after the fault (was %s)" % (leader, seen - since, old))
                return leader, seen
            time.sleep(0.2)
        text = "no other node led within %.0fs of a fault of leader %s" % (timeout * self.slow, old)
        log("WARNING: " + text)
        self.ha_warnings.append(text)
        return None, None

    def inject_ha(self, kind):
        rng = self.rng
        old = self.wait_ha_healthy()
        if old is None:
            raise HarnessError("no leader to inject %s into" % kind)
        index = old[1:]
        if kind == "ha_etcd_kill":
            member = "etcd%d" % rng.randint(1, 3)
            down = rng.uniform(2.0, 6.0)
            log("fault: kill -9 %s for %.1fs (leader %s)" % (member, down, old))
            self.cluster_script("stop-member", self.cluster_dir, member, "--kill")
            time.sleep(down)
            self.cluster_script("start-member", self.cluster_dir, member)
            self.wait_ha_healthy()
            return
        start = time.time()
        if kind == "ha_kill_postgres":
            log("fault: kill -9 of the leader's postgres (%s) with %d client requests in flight" % (
                old, self.traffic.in_flight))
            self.cluster_script("kill-postgres", self.cluster_dir, old)
            new, seen = self.wait_leader_change(old, start)
        elif kind == "ha_kill_patroni":
            log("fault: kill -9 of the leader's Patroni (patroni%s on %s) with %d client requests in flight" % (
                index, old, self.traffic.in_flight))
            self.cluster_script("stop-member", self.cluster_dir, "patroni" + index, "--kill")
            new, seen = self.wait_leader_change(old, start)
            time.sleep(rng.uniform(0.5, 3.0))
            log("starting patroni%s again" % index)
            self.cluster_script("start-member", self.cluster_dir, "patroni" + index, timeout=180)
        elif kind == "ha_standbys_lost":
            standbys = sorted(n for n in self.servers.nodes if n != old)
            cut = rng.uniform(2.0, 4.0)
            log("fault: standbys %s cut off for %.1fs, then kill -9 of the leader's postgres (%s), with %d client "
                "requests in flight" % (" and ".join(standbys), cut, old, self.traffic.in_flight))
            try:
                for node in standbys:
                    self.cluster_script("partition", self.cluster_dir, node)
                time.sleep(cut)
                self.cluster_script("kill-postgres", self.cluster_dir, old)
            finally:
                for node in standbys:
                    self.cluster_script("heal", self.cluster_dir, node)
            # Patroni decides at the leader's next loop: if no standby is a candidate yet (their
            # replication and etcd members are only coming back), the old leader recovers its
            # PostgreSQL in place and keeps the lock. Safe (nothing it acknowledged was lost), so
            # not a finding; it is no failover either.
            new, seen = self.wait_leader_change(old, start, or_recovered=True)
        elif kind == "ha_partition":
            log("fault: network partition of the leader %s with %d client requests in flight" % (
                old, self.traffic.in_flight))
            self.cluster_script("partition", self.cluster_dir, old)
            try:
                new, seen = self.wait_leader_change(old, start)
                time.sleep(rng.uniform(1.0, 4.0))
            finally:
                log("healing %s" % old)
                self.cluster_script("heal", self.cluster_dir, old)
        else:
            raise AssertionError(kind)
        self.failover_events.append((kind, start, old, new, seen))
        self.wait_ha_healthy()

    def run_ha_faults(self, duration):
        """The HA profiles' faults, one at a time on a healthy cluster: every leader fault
        `leader_faults` times and an etcd kill (one per two rounds), and the profile's other kinds
        once each, in a random order; then random ones of all kinds at the fault rate until the
        duration is up. The traffic runs at least `duration` and until the last fault's cluster is
        healthy again, plus a few seconds to see clients served."""
        start = time.time()
        end = start + duration
        rounds = self.profile.get("leader_faults", 1)
        plan = list(self.profile.get("plan") or HA_LEADER_FAULT_KINDS * rounds + ["ha_etcd_kill"] * max(
            1, rounds // 2) + list(self.profile.get("app_kinds", ())))
        self.rng.shuffle(plan)
        time.sleep(min(5.0, duration / 10))
        slot = max(1.0, (duration * 0.8) / max(1, len(plan)))
        for kind in plan:
            slot_start = time.time()
            self.check_daemons()
            self.inject(kind)
            remaining = slot - (time.time() - slot_start)
            time.sleep(max(1.0, self.rng.uniform(1.0, max(1.0, remaining))))
        kinds = self.available_kinds()
        while self.args.fault_rate > 0:
            gap = self.rng.expovariate(self.args.fault_rate / 60.0)
            if time.time() + gap + 30 > end:
                break
            time.sleep(gap)
            self.check_daemons()
            self.inject(self.rng.choice(kinds))
        self.wait_ha_healthy()
        time.sleep(max(5.0, end - time.time()))

    def provider_slow(self, slow):
        """Tells the hostile client the provider is slow now, so that it floods."""
        if self.hostile is not None:
            (self.hostile.provider_slow.set if slow else self.hostile.provider_slow.clear)()

    def rolling_restart(self):
        """scripts/cluster.sh rolling-restart under traffic, in a window no other fault touches:
        first the effects of the previous fault must have passed (no client error for 2 s)."""
        deadline = time.time() + 20 * self.slow
        while time.time() < deadline:
            with self.traffic.lock:
                last = max((e[1] for e in self.traffic.client_errors), default=0.0)
            if time.time() - last >= 2.0:
                break
            time.sleep(0.2)
        else:
            log("WARNING: clients still see errors from the previous fault; rolling restart anyway")
        log("fault: rolling restart of the APIs with %d client requests in flight" % self.traffic.in_flight)
        start = time.time()
        try:
            run([CLUSTER, "rolling-restart", self.cluster_dir], timeout=120 * self.slow)
        finally:
            end = time.time()
            self.rolling_windows.append((start, end))
        log("rolling restart took %.1fs" % (end - start))

    def run_faults(self, duration):
        start = time.time()
        end = start + duration
        kinds = self.available_kinds()
        # Every kind once, in a random order, spread over the run; then random ones at the rate.
        plan = list(kinds) + ["redis_failover"] * (self.profile.get("failovers", 1) - 1)
        self.rng.shuffle(plan)
        time.sleep(min(3.0, duration / 10))
        # The guaranteed ones come at least as often as the fault rate asks, and all of them
        # within the first 80% of the run.
        slot = max(1.0, min((duration * 0.8) / max(1, len(plan)), 60.0 / max(0.01, self.args.fault_rate)))
        for kind in plan:
            slot_start = time.time()
            self.check_daemons()
            self.inject(kind)
            remaining = slot - (time.time() - slot_start)
            time.sleep(max(0.3, self.rng.uniform(0.3, max(0.3, remaining))))
            if time.time() > end + 30:
                break
        while True:
            gap = self.rng.expovariate(max(0.01, self.args.fault_rate) / 60.0)
            if time.time() + gap + 6 > end:
                break
            time.sleep(gap)
            self.check_daemons()
            self.inject(self.rng.choice(kinds))
        time.sleep(max(0.0, end - time.time()))

    def check_daemons(self):
        # A daemon that died by itself (not by our kill -9) is a finding; bring it back so the
        # run can go on, and say so.
        extra = [self.pgbouncer, self.haproxy] if self.cluster else []
        for d in self.apis + self.enqueuers + self.completers + [self.mock] + extra:
            if not d.alive():
                code = d.proc.returncode if d.proc else None
                self.unexpected_exits.append("%s exited with %s" % (d.name, code))
                log("WARNING: %s exited by itself with %s (see %s)" % (d.name, code, d.log_path))
                if d is self.mock:
                    raise HarnessError("the provider stand-in died; its state is lost")
                if d is self.haproxy:
                    raise HarnessError("HAProxy died (see %s)" % d.log_path)
                d.start()
                if d in self.apis:
                    self.wait_http(d.port, "/healthz", d)

    # -- quiescence and checks ------------------------------------------------------------------

    def quiesce(self, timeout):
        self.mock_config(failure_rate=0, latency_ms=0, drop_rate=0)
        if not self.servers.pg_up:
            self.servers.pg_start()
        if not self.servers.redis_up:
            self.servers.redis_start()
        self.check_daemons()
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                row = self.servers.psql(
                    "SELECT (SELECT count(*) FROM idempotency_keys WHERE recovery_point <> 'finished' "
                    "OR locked_at IS NOT NULL), (SELECT count(*) FROM staged_jobs)").strip()
                unfinished, staged = (int(x) for x in row.split("|"))
                last = (unfinished, staged)
                if unfinished == 0 and (staged == 0 or not self.enqueuers):
                    return True
            except (HarnessError, subprocess.TimeoutExpired, ValueError):
                pass
            time.sleep(0.5)
            self.check_daemons()
        log("quiesce timed out after %.0fs: unfinished keys=%s staged_jobs=%s" % (timeout, last and last[0],
                                                                                  last and last[1]))
        return False

    def check(self):
        findings = collections.defaultdict(list)
        # The body as a replay from the database answers it: a ride's 201 is stored as NULL when it
        # is rides_created_body_v1 of the key's ride, which every reader renders back through the
        # renderer the key names (sql/019).
        keys = self.servers.psql_json(
            "SELECT id, user_id, idempotency_key, recovery_point, locked_at IS NOT NULL AS locked, response_code, "
            "COALESCE(response_body, CASE WHEN response_code IS NOT NULL "
            "THEN idem_stored_answer(k.id, k.response_renderer) END) AS response_body, "
            "payment_idempotency_key, request_path, host(origin_ip) AS origin_ip FROM idempotency_keys k")
        rides = self.servers.psql_json(
            "SELECT id, idempotency_key_id, stripe_charge_id, user_id, cancelled_at IS NOT NULL AS cancelled, "
            "stripe_refund_id, refund_idempotency_key FROM rides")
        staged = self.servers.psql_json("SELECT staged_jobs_jid(id, jid) AS jid FROM staged_jobs")
        status, _, data = http_call(self.mock_port, "GET", "/_mock/charges", timeout=30)
        if status != 200:
            raise HarnessError("GET /_mock/charges answered %d" % status)
        charges = json.loads(data)
        status, _, data = http_call(self.mock_port, "GET", "/_mock/refunds", timeout=30)
        if status != 200:
            raise HarnessError("GET /_mock/refunds answered %d" % status)
        refunds = json.loads(data)
        status, _, data = http_call(self.mock_port, "GET", "/_mock/stats", timeout=30)
        stats = json.loads(data)

        keys_by_id = {k["id"]: k for k in keys}
        keys_by_user_key = {(k["user_id"], k["idempotency_key"]): k for k in keys}
        keys_by_payment = {k["payment_idempotency_key"]: k for k in keys}
        rides_by_key = collections.defaultdict(list)
        for r in rides:
            if r["idempotency_key_id"] is not None:
                rides_by_key[r["idempotency_key_id"]].append(r)
        rides_by_id = {r["id"]: r for r in rides}
        charges_by_payment = collections.defaultdict(list)
        for c in charges:
            charges_by_payment[c["idempotency_key"]].append(c)
        customers = {u["id"]: u["stripe_customer_id"]
                     for u in self.servers.psql_json("SELECT id, stripe_customer_id FROM users")}
        paying_customers = {customers.get(k["user_id"]) for k in keys if k["response_code"] == 201}

        # 1. Exactly one charge per paid request, none twice, none without a ride.
        duplicates = 0
        for payment_key, group in charges_by_payment.items():
            if len(group) > 1:
                duplicates += len(group) - 1
                findings["duplicates"].append("payment key %s charged %d times" % (payment_key, len(group)))
        # A request's provider key derives from the request (the user and the client's key, under
        # PROVIDER_KEY_SECRET) and its key row stores it, and the charge's description names no
        # request: a second charge of a paid request can only come under a key that no request
        # holds, so such a charge of a paying customer counts as a duplicate (and as an orphan below).
        for c in charges:
            if c["idempotency_key"] not in keys_by_payment and c["customer"] in paying_customers:
                duplicates += 1
                findings["duplicates"].append("customer %s charged under payment key %s, which no request holds"
                                              % (c["customer"], c["idempotency_key"]))
        orphan_charges = 0
        for c in charges:
            k = keys_by_payment.get(c["idempotency_key"])
            ride_charges = [r for r in rides_by_key.get(k["id"], [])] if k else []
            if k is None or not any(r["stripe_charge_id"] == c["id"] for r in ride_charges):
                orphan_charges += 1
                findings["orphan_charges"].append("charge %s (payment key %s) has no ride recording it"
                                                  % (c["id"], c["idempotency_key"]))
            elif k["response_code"] != 201:
                orphan_charges += 1
                findings["orphan_charges"].append("charge %s belongs to key %d answered %s"
                                                  % (c["id"], k["id"], k["response_code"]))
        bad_rides = 0
        for k in keys:
            mine = rides_by_key.get(k["id"], [])
            if k["response_code"] == 201:
                paid = charges_by_payment.get(k["payment_idempotency_key"], [])
                if len(mine) != 1 or len(paid) != 1 or mine[0]["stripe_charge_id"] != paid[0]["id"]:
                    bad_rides += 1
                    findings["bad_rides"].append("key %d (201): %d rides, %d charges, ride charge %s" % (
                        k["id"], len(mine), len(paid), mine[0]["stripe_charge_id"] if mine else None))
            elif k["response_code"] == 402:
                if any(r["stripe_charge_id"] for r in mine) or charges_by_payment.get(k["payment_idempotency_key"]):
                    bad_rides += 1
                    findings["bad_rides"].append("key %d (402) has a charge" % k["id"])
            if len(mine) > 1:
                bad_rides += 1
                findings["bad_rides"].append("key %d has %d rides" % (k["id"], len(mine)))

        # 2. Every key finished with one of its endpoint's final answers, none locked.
        stuck = [k for k in keys if k["recovery_point"] != "finished" or k["locked"]
                 or k["response_code"] not in final_codes(k["request_path"])]
        for k in stuck:
            findings["stuck_keys"].append("key %d %s: recovery_point=%s locked=%s response_code=%s" % (
                k["id"], k["idempotency_key"], k["recovery_point"], k["locked"], k["response_code"]))

        # 3. One staged job per finished 201, every one in Redis (distinct jids; re-pushes allowed).
        lost_jobs = 0
        duplicate_jobs = 0
        redis_jobs = 0
        paid_keys = [k for k in keys if k["response_code"] == 201]
        if self.enqueuers:
            out = self.servers.redis_cli("--raw", "LRANGE", "queue:default", "0", "-1", timeout=120).stdout.decode()
            jids_by_ride = collections.defaultdict(set)
            cancel_jids_by_ride = collections.defaultdict(set)
            jids = set()
            bad_payloads = 0
            for line in out.splitlines():
                line = line.strip()
                if not line:
                    continue
                redis_jobs += 1
                try:
                    job = json.loads(line)
                    jids.add(job["jid"])
                    args = job.get("args") or [{}]
                    ride_id = args[0].get("ride_id") if isinstance(args[0], dict) else None
                    if job["class"] == "SendCancellationReceiptJob":
                        cancel_jids_by_ride[ride_id].add(job["jid"])
                    else:
                        jids_by_ride[ride_id].add(job["jid"])
                except (ValueError, KeyError, TypeError, AttributeError):
                    bad_payloads += 1
            if bad_payloads:
                findings["bad_jobs"].append("%d payloads in queue:default are not Sidekiq JSON with a jid" % bad_payloads)
            for row in staged:
                findings["lost_jobs"].append("jid %s still in staged_jobs" % row["jid"])
            for k in paid_keys:
                mine = rides_by_key.get(k["id"], [])
                got = set().union(*(jids_by_ride.get(r["id"], set()) for r in mine)) if mine else set()
                if not got:
                    lost_jobs += 1
                    findings["lost_jobs"].append("key %d (ride %s): no job in Redis" % (
                        k["id"], [r["id"] for r in mine]))
                elif len(got) > 1:
                    duplicate_jobs += len(got) - 1
                    findings["duplicate_jobs"].append("key %d: %d distinct jids %s" % (k["id"], len(got), sorted(got)))
            for ride_id, group in jids_by_ride.items():
                r = rides_by_id.get(ride_id)
                k = keys_by_id.get(r["idempotency_key_id"]) if r else None
                if k is None or k["response_code"] != 201:
                    duplicate_jobs += len(group)
                    findings["duplicate_jobs"].append("jobs %s for ride %s, which has no 201 key" % (sorted(group), ride_id))
            # A cancellation receipt for every refunded ride, once; none for any other ride.
            refunded_rides = [r for r in rides if r["cancelled"] and r["stripe_refund_id"]]
            for r in refunded_rides:
                got = cancel_jids_by_ride.get(r["id"], set())
                if not got:
                    lost_jobs += 1
                    findings["lost_jobs"].append("ride %d (cancelled, refund %s): no cancellation receipt in Redis"
                                                 % (r["id"], r["stripe_refund_id"]))
                elif len(got) > 1:
                    duplicate_jobs += len(got) - 1
                    findings["duplicate_jobs"].append("ride %d: %d distinct cancellation jids" % (r["id"], len(got)))
            for ride_id, group in cancel_jids_by_ride.items():
                r = rides_by_id.get(ride_id)
                if r is None or not r["cancelled"]:
                    duplicate_jobs += len(group)
                    findings["duplicate_jobs"].append("cancellation jobs %s for ride %s, which is not cancelled"
                                                      % (sorted(group), ride_id))
            if len(jids) < len(paid_keys) + len(refunded_rides):
                lost_jobs = max(lost_jobs, len(paid_keys) + len(refunded_rides) - len(jids))
            lost_jobs = max(lost_jobs, len(staged))
        self.redis_jobs = redis_jobs
        # Pushes beyond one per jid: a batch pushed again after a rollback (allowed, counted).
        self.redis_repushed = redis_jobs - len(jids) if self.enqueuers else 0

        # 4. Each final answer equals what its key stores.
        mismatched = 0
        extra_answers = 0
        unexpected = 0
        answered = 0
        gave_up = 0
        for rec in self.traffic.records:
            if rec.status is None:
                gave_up += 1
                continue
            answered += 1
            if rec.status not in final_codes(rec.path):
                unexpected += 1
                findings["unexpected_answers"].append("key %s: final answer %d %r" % (
                    rec.key, rec.status, rec.body[:300]))
            k = keys_by_user_key.get((self.user_ids[rec.user], rec.key))
            if k is None:
                mismatched += 1
                findings["mismatched_answers"].append("key %s answered %d but has no row" % (rec.key, rec.status))
                continue
            stored = (k["response_body"] or "").encode()
            if k["response_code"] != rec.status or stored != rec.body:
                mismatched += 1
                findings["mismatched_answers"].append("key %s: client got %d %r, stored %s %r" % (
                    rec.key, rec.status, rec.body[:200], k["response_code"], stored[:200]))
            for status, body, _replayed in rec.extra:
                extra_answers += 1
                if k["response_code"] != status or stored != body:
                    mismatched += 1
                    findings["mismatched_answers"].append("key %s: second request got %d %r, stored %s %r" % (
                        rec.key, status, body[:200], k["response_code"], stored[:200]))
        client_keys = {(self.user_ids[r.user], r.key) for r in self.traffic.records}
        hostile_id = self.user_ids[self.hostile_user[0]]
        # The hostile user's rows are checked in check_hostile (invariant 7).
        foreign = [k for k in keys if (k["user_id"], k["idempotency_key"]) not in client_keys
                   and k["user_id"] != hostile_id]
        for k in foreign:
            findings["foreign_keys"].append("key row %d %s was never sent" % (k["id"], k["idempotency_key"]))

        # 6. Refunds (issue 15): no charge refunded twice, every refund the refund of a charged ride
        # (under that ride's own refund key), every 200 to a cancel backed by its refund at the
        # provider, and every refund at the provider recorded on its ride, which is cancelled.
        refund_violations = 0
        rides_by_refund_key = {r["refund_idempotency_key"]: r for r in rides}
        refunds_by_charge = collections.defaultdict(list)
        refunds_by_id = {}
        for refund in refunds:
            refunds_by_charge[refund["charge"]].append(refund)
            refunds_by_id[refund["id"]] = refund
        double_refunds = 0
        for charge, group in refunds_by_charge.items():
            if len(group) > 1:
                double_refunds += len(group) - 1
                findings["double_refunds"].append("charge %s refunded %d times: %s" % (
                    charge, len(group), sorted(r["id"] for r in group)))
        for refund in refunds:
            r = rides_by_refund_key.get(refund["idempotency_key"])
            if r is None or r["stripe_charge_id"] != refund["charge"]:
                refund_violations += 1
                findings["refund_violations"].append("refund %s of charge %s: no charged ride with refund key %s" % (
                    refund["id"], refund["charge"], refund["idempotency_key"]))
            elif not r["cancelled"] or r["stripe_refund_id"] != refund["id"]:
                refund_violations += 1
                findings["refund_violations"].append("refund %s at the provider, but ride %d has cancelled=%s "
                                                     "stripe_refund_id=%s" % (refund["id"], r["id"], r["cancelled"],
                                                                              r["stripe_refund_id"]))
        cancels_answered = 0
        for rec in self.traffic.records:
            if rec.ride_id is None or rec.status != 200:
                continue
            cancels_answered += 1
            try:
                shown = json.loads(rec.body).get("ride") or {}
            except (ValueError, AttributeError):
                shown = {}
            r = rides_by_id.get(rec.ride_id)
            refund = refunds_by_id.get(shown.get("stripe_refund_id"))
            if (r is None or r["user_id"] != self.user_ids[rec.user] or refund is None
                    or refund["charge"] != r["stripe_charge_id"]):
                refund_violations += 1
                findings["refund_violations"].append("cancel %s of ride %s answered 200 with refund %s, which the "
                                                     "provider does not have for that ride's charge" % (
                                                         rec.key, rec.ride_id, shown.get("stripe_refund_id")))
        for r in rides:
            if r["stripe_refund_id"] and r["stripe_refund_id"] not in refunds_by_id:
                refund_violations += 1
                findings["refund_violations"].append("ride %d records refund %s, unknown to the provider" % (
                    r["id"], r["stripe_refund_id"]))

        # 5. (cluster) No client error overlaps a rolling restart.
        restart_errors = 0
        if self.cluster:
            for sent, ended, status, key in self.traffic.client_errors:
                for start, end in self.rolling_windows:
                    if sent <= end and ended >= start:
                        restart_errors += 1
                        findings["restart_errors"].append(
                            "key %s: %s at %s-%s during the rolling restart of %s-%s" % (
                                key, status if status is not None else "no answer", _clock(sent), _clock(ended),
                                _clock(start), _clock(end)))
                        break

        statuses = collections.Counter()
        for rec in self.traffic.records:
            statuses.update(rec.statuses)
        result = collections.OrderedDict()
        result["requests"] = self.traffic.requests
        result["keys"] = len(self.traffic.records)
        result["answered"] = answered
        result["abandoned"] = gave_up
        result["second_answers"] = extra_answers
        result["replayed_answers"] = sum(1 for r in self.traffic.records if r.replayed)
        result["created"] = sum(1 for k in keys if k["response_code"] == 201)
        result["declined"] = sum(1 for k in keys if k["response_code"] == 402)
        result["faults"] = sum(self.faults.values())
        result["charges"] = len(charges)
        result["cancels"] = sum(1 for r in self.traffic.records if r.ride_id is not None)
        result["cancels_answered_200"] = cancels_answered
        result["refunds"] = len(refunds)
        result["cancelled_rides"] = sum(1 for r in rides if r["cancelled"])
        result["jobs_in_redis"] = redis_jobs
        result["jobs_repushed"] = self.redis_repushed
        if self.servers.sentinel:
            result["redis_failovers"] = self.faults["redis_failover"]
            result["final_redis_master"] = self.servers.redis_port
        result["duplicates"] = duplicates
        result["double_refunds"] = double_refunds
        result["refund_violations"] = refund_violations
        result["orphan_charges"] = orphan_charges
        result["bad_rides"] = bad_rides
        result["lost_jobs"] = lost_jobs
        result["duplicate_jobs"] = duplicate_jobs
        result["stuck_keys"] = len(stuck)
        result["mismatched_answers"] = mismatched
        result["unexpected_answers"] = unexpected
        result["unexpected_exits"] = len(self.unexpected_exits)
        if self.cluster:
            result["client_errors"] = len(self.traffic.client_errors)
            result["rolling_restarts"] = len(self.rolling_windows)
            result["restart_errors"] = restart_errors
        for e in self.unexpected_exits:
            findings["unexpected_exits"].append(e)
        if self.ha:
            result.update(self.check_ha(keys, rides, charges, findings))
        result.update(self.check_hostile(keys, rides, charges, findings))
        return result, findings, statuses, stats

    # -- the HA checks --------------------------------------------------------------------------

    def derived_charge_key(self, user_id, client_key):
        """The provider key a derived-key build sends for a charge (common/payments/provider_key.cpp)."""
        digest = hmac.new(self.provider_key_secret.encode(), ("charge\n%d\n%s" % (user_id, client_key)).encode(),
                          hashlib.sha256).hexdigest()
        return "rr-ch-" + digest

    def acknowledged(self):
        """What the clients were told: [(user id, client key, status, ride JSON, record)] for every
        201 to POST /rides and 200 to a cancel a good client or the hostile flood got."""
        out = []
        for rec in self.traffic.records:
            uid = self.user_ids[rec.user]
            for status, body in [(rec.status, rec.body)] + [(st, b) for st, b, _ in rec.extra]:
                if status in (200, 201) and body:
                    try:
                        ride = json.loads(body).get("ride") or {}
                    except (ValueError, AttributeError):
                        ride = {}
                    out.append((uid, rec.key, status, ride, rec))
        hostile_id = self.user_ids[self.hostile_user[0]]
        for key, status, body in self.hostile.flood_answers:
            if status == 201:
                try:
                    ride = json.loads(body).get("ride") or {}
                except (ValueError, AttributeError):
                    ride = {}
                out.append((hostile_id, key, status, ride, None))
        return out

    def check_ha(self, keys, rides, charges, findings):
        """Double charges and lost acknowledged writes, from the provider's records, the clients'
        answers and the final leader's database (never the API's word):

        - every charge at the provider is attributed to a client key: through the final database
          (its provider key is a key row's, or its id a ride's), through an answer a client saw
          (the charge id of a 201), through the derived provider key recomputed from the client's
          key and user id (when the build derives them: PROVIDER_KEY_SECRET), or through its
          description (the key row id it names, if that row is the charged customer's);
          a client key with more than one charge is charged twice; a charge that the final database
          does not know and that no client saw acknowledged counts as a double charge as well;
        - every 201 a client saw has its ride in the final database, with that charge, under that
          client's key, and the charge at the provider; every 200 to a cancel has its ride cancelled
          with that refund."""
        acked = self.acknowledged()
        keys_by_payment = {k["payment_idempotency_key"]: k for k in keys}
        keys_by_id = {k["id"]: k for k in keys}
        rides_by_id = {r["id"]: r for r in rides}
        rides_by_charge = {r["stripe_charge_id"]: r for r in rides if r["stripe_charge_id"]}
        charges_by_id = {c["id"]: c for c in charges}
        customer_of = {self.user_ids[u[0]]: u[1] for u in self.users}
        customer_of[self.user_ids[self.hostile_user[0]]] = self.hostile_user[1]
        seen = {}
        for uid, key, status, ride, _rec in acked:
            if status == 201 and ride.get("stripe_charge_id"):
                seen[ride["stripe_charge_id"]] = (uid, key)
        derived = {}
        if self.provider_key_secret:
            sent = {(self.user_ids[r.user], r.key) for r in self.traffic.records if r.ride_id is None}
            sent |= {(self.user_ids[self.hostile_user[0]], k) for k in self.hostile.flood_keys}
            for uid, key in sent:
                derived[self.derived_charge_key(uid, key)] = (uid, key)
        owners = collections.defaultdict(list)
        double = 0
        attributed = collections.Counter()
        prefix = "Rocket Rides ride (request "
        for c in charges:
            k = keys_by_payment.get(c["idempotency_key"])
            r = rides_by_charge.get(c["id"])
            known = k is not None or r is not None
            owner, how = None, None
            if k is not None:
                owner, how = (k["user_id"], k["idempotency_key"]), "final database (provider key)"
            elif r is not None and keys_by_id.get(r["idempotency_key_id"]):
                k2 = keys_by_id[r["idempotency_key_id"]]
                owner, how = (k2["user_id"], k2["idempotency_key"]), "final database (ride)"
            elif c["id"] in seen:
                owner, how = seen[c["id"]], "a client's 201"
            elif c["idempotency_key"] in derived:
                owner, how = derived[c["idempotency_key"]], "derived provider key"
            else:
                desc = c.get("description", "")
                if desc.startswith(prefix) and desc.endswith(")") and desc[len(prefix):-1].isdigit():
                    k2 = keys_by_id.get(int(desc[len(prefix):-1]))
                    if k2 is not None and customer_of.get(k2["user_id"]) == c.get("customer"):
                        owner, how = (k2["user_id"], k2["idempotency_key"]), "description"
            attributed[how or "nothing"] += 1
            if not known and c["id"] not in seen:
                double += 1
                findings["double_charges"].append(
                    "charge %s (provider key %s, customer %s, %r) is unknown to the final database and no client "
                    "saw it acknowledged%s" % (c["id"], c["idempotency_key"], c.get("customer"), c.get("description"),
                                               "; by its %s it is client key %s's" % (how, owner[1]) if owner else ""))
                continue
            if owner is not None:
                owners[owner].append(c)
        for (uid, key), group in sorted(owners.items()):
            if len(group) > 1:
                double += len(group) - 1
                findings["double_charges"].append("client key %s (user %d) charged %d times: %s" % (
                    key, uid, len(group), ", ".join("%s (provider key %s)" % (c["id"], c["idempotency_key"])
                                                    for c in group)))
        lost = 0
        lost_keys = set()
        for uid, key, status, ride, rec in acked:
            if (uid, key) in lost_keys:
                continue
            problem = None
            if status == 201:
                r = rides_by_id.get(ride.get("id"))
                k = keys_by_id.get(r["idempotency_key_id"]) if r else None
                if r is None:
                    problem = "ride %s is not in the final database" % ride.get("id")
                elif r["stripe_charge_id"] != ride.get("stripe_charge_id"):
                    problem = "ride %s records charge %s, the client saw %s" % (
                        r["id"], r["stripe_charge_id"], ride.get("stripe_charge_id"))
                elif k is None or (k["user_id"], k["idempotency_key"]) != (uid, key):
                    problem = "ride %s belongs to key row %s, not to this client key" % (r["id"], r["idempotency_key_id"])
                elif ride.get("stripe_charge_id") not in charges_by_id:
                    problem = "charge %s of ride %s is not at the provider" % (ride.get("stripe_charge_id"), r["id"])
            elif rec is not None and rec.ride_id is not None:
                r = rides_by_id.get(rec.ride_id)
                if r is None:
                    problem = "cancelled ride %s is not in the final database" % rec.ride_id
                elif not r["cancelled"] or r["stripe_refund_id"] != ride.get("stripe_refund_id"):
                    problem = "ride %s: cancelled=%s refund %s, the client saw refund %s" % (
                        r["id"], r["cancelled"], r["stripe_refund_id"], ride.get("stripe_refund_id"))
            if problem:
                lost += 1
                lost_keys.add((uid, key))
                findings["lost_acknowledged"].append("client key %s (user %d) answered %d: %s" % (
                    key, uid, status, problem))
        log("charges attributed by: %s" % ", ".join("%s=%d" % kv for kv in sorted(attributed.items())))
        out = collections.OrderedDict()
        out["failovers"] = len(self.monitor.changes()) if self.monitor else 0
        out["double_charges"] = double
        out["lost_acknowledged"] = lost
        unavailable = self.unavailability()
        out.update(unavailable)
        out["final_leader"] = self.servers.pinned
        out["leader_faults"] = len(self.failover_events)
        out["acknowledged"] = len(acked)
        return out

    def unavailability(self):
        """max_unavailable_s: the longest span of the traffic with no 2xx to any good client;
        p50_unavailable_s: the median over the leader faults that moved the leader of the time from
        the fault to the first 2xx that wrote (not a replay) to a request sent after the fault and
        answered once the new leader was seen."""
        with self.traffic.lock:
            oks = sorted(self.traffic.ok_times, key=lambda o: o[1])
        begin, end = self.traffic_window
        longest, at, last = 0.0, begin, begin
        for _sent, ended, _replayed in oks:
            if ended < begin or ended > end:
                continue
            if ended - last > longest:
                longest, at = ended - last, last
            last = ended
        if end - last > longest:
            longest, at = end - last, last
        spans = []
        for kind, fault, old, new, seen in self.failover_events:
            if new is None:
                continue
            first = next((ended for sent, ended, replayed in oks
                          if sent >= fault and ended >= seen and not replayed), None)
            if first is None:
                log("unavailability: no 2xx after the %s of %s at %s" % (kind, old, _clock(fault)))
                first = end
            spans.append(first - fault)
            log("unavailability: %s of %s at %s: %s leads after %.1fs, first 2xx after %.1fs" % (
                kind, old, _clock(fault), new, seen - fault, first - fault))
        log("longest span without a 2xx: %.1fs from %s" % (longest, _clock(at)))
        spans.sort()
        median = (spans[len(spans) // 2] if len(spans) % 2 else (spans[len(spans) // 2 - 1] + spans[len(spans) // 2]) / 2
                  ) if spans else float("nan")
        return collections.OrderedDict([("max_unavailable_s", "%.1f" % longest), ("p50_unavailable_s", "%.1f" % median)])

    def ha_verdict(self, result, findings, summary, started, planted):
        """The HA profiles' one line: RESULT PASS or FAIL, then the figures that decide it."""
        failed = bool(findings)
        head = ["RESULT %s" % ("FAIL" if failed else "PASS"), "seed=%d" % self.seed]
        for name in ("failovers", "double_charges", "lost_acknowledged", "lost_jobs", "stuck_keys",
                     "max_unavailable_s", "p50_unavailable_s"):
            head.append("%s=%s" % (name, result[name]))
        rest = " ".join("%s=%s" % kv for kv in result.items() if kv[0] not in (
            "failovers", "double_charges", "lost_acknowledged", "lost_jobs", "stuck_keys", "max_unavailable_s",
            "p50_unavailable_s"))
        tail = ["replicas=%s" % ("async" if self.args.async_replicas else "sync"),
                "findings=%s" % (",".join(sorted(findings)) or "none")]
        if planted is not None:
            caught = []
            for name, needle in planted:
                caught.append("%s:%s" % (name, "caught" if any(needle in f for f in findings.get(name, [])) else "MISSED"))
            tail.append("planted=%s" % ",".join(caught))
            # The self-test fails by design: its logs are kept only if a plant went unseen.
            self.plants_caught = all(c.endswith(":caught") for c in caught)
        print("%s %s %s elapsed=%.0fs" % (" ".join(head), rest, " ".join(tail), time.time() - started))
        sys.stdout.flush()
        return 1 if failed else 0

    def ha_self_test(self, code):
        """--self-test: once the run has its own verdict, the plants of --plant-violations and a
        second check over the same records, which must name each; so one cluster serves both the
        run and the checker's self-test. Returns the run's code, or 1 if a plant went unseen."""
        planted = self.plant_ha_violations()
        _, findings, _, _ = self.check()
        caught = ["%s:%s" % (name, "caught" if any(needle in f for f in findings.get(name, [])) else "MISSED")
                  for name, needle in planted]
        print("SELF-TEST planted=%s" % ",".join(caught), flush=True)
        return 1 if any(c.endswith(":MISSED") for c in caught) else code

    def plant_ha_violations(self):
        """--plant-violations over the Patroni cluster: after quiescing, on the final leader and at
        the provider, one extra charge for a client key the clients used (a second provider key,
        as a lost commit's retry would make) and the deletion of a ride whose 201 a client saw.
        The run must then print RESULT FAIL naming both; returns [(finding, what names it)]."""
        acked = [(uid, key, ride, rec) for uid, key, status, ride, rec in self.acknowledged()
                 if status == 201 and rec is not None and ride.get("id")]
        cancelled = {rec.ride_id for rec in self.traffic.records if rec.ride_id is not None}
        acked = [a for a in acked if a[2]["id"] not in cancelled]
        if len(acked) < 2:
            raise HarnessError("too few acknowledged rides to plant violations")
        (uid, key, ride, rec), (uid2, key2, ride2, rec2) = acked[0], acked[-1]
        row = self.servers.psql_json("SELECT id FROM idempotency_keys WHERE user_id = %d AND idempotency_key = '%s'"
                                     % (uid, key.replace("'", "''")))
        customer = next(u[1] for u in self.users if u[0] == rec.user)
        body = urllib.parse.urlencode([("amount", "100"), ("currency", "usd"), ("customer", customer),
                                       ("description", "Rocket Rides ride (request %s)" % (row[0]["id"] if row else 0))])
        status, _, data = http_call(self.mock_port, "POST", "/v1/charges", body, {
            "Authorization": "Bearer " + STRIPE_KEY, "Idempotency-Key": "planted-" + uuid.uuid4().hex,
            "Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
        if status != 200:
            raise HarnessError("planting a charge: %d %r" % (status, data[:200]))
        charge = json.loads(data)["id"]
        # The ledger is insert-only (sql/016): a lost commit takes its rows, which only a session
        # that skips triggers (as a replica applying changes does) can delete.
        self.servers.psql("BEGIN; SET LOCAL session_replication_role = replica; "
                          "DELETE FROM provider_refunds WHERE ride_id = %d; DELETE FROM provider_charges WHERE ride_id = %d; "
                          "DELETE FROM rides WHERE id = %d; COMMIT" % ((int(ride2["id"]),) * 3))
        log("planted: a second charge %s for client key %s, ride %s of client key %s (acknowledged 201) deleted "
            "from the final leader %s" % (charge, key, ride2["id"], key2, self.servers.pinned))
        return [("double_charges", charge), ("lost_acknowledged", "ride %s " % ride2["id"])]

    # Faults during which the API may not answer at all, or HAProxy answers for it (502, 503 with
    # no API up, 504): a probe that overlaps one (plus a grace for health checks to notice the
    # API back) may see a connection error or a HAProxy error page without that being a finding.
    # A rolling restart counts only for probes straight to an API (that API is down a moment);
    # through HAProxy it must go unseen, as for the good clients (invariant 5). The provider,
    # Redis, enqueuer and completer faults never stop the API answering, so they excuse nothing.
    EXCUSING_FAULTS = ("api_kill", "api_kill_in_flight", "pg_restart", "pgbouncer_restart", "rolling_restart",
                       "ha_kill_postgres", "ha_kill_patroni", "ha_partition", "ha_standbys_lost")

    def hostile_excused(self, rec):
        grace = 2.0 * self.slow
        ended = rec.ended if rec.ended is not None else rec.sent
        for kind, start, end in self.fault_windows:
            if kind not in self.EXCUSING_FAULTS or (kind == "rolling_restart" and not rec.direct):
                continue
            if rec.sent <= end + grace and ended >= start:
                return True
        return False

    def check_hostile(self, keys, rides, charges, findings):
        """6. The hostile client: every answer the API gave it has the status docs/http-api.md promises
        (never a 5xx but 503), a smuggling shape got one answer on a connection the API closed,
        and every probe got an answer outside the faults that excuse none.
        7. Nothing it sent with an invalid shape wrote a row: no key row holds HOSTILE_PREFIX, and
        the hostile user's keys, rides and charges all belong to keys of its valid flood; the
        flood's final answers equal what their keys store."""
        h = self.hostile
        counts = collections.Counter()
        by_kind = collections.defaultdict(collections.Counter)

        def finding(name, rec, text):
            counts[name] += 1
            findings["hostile_" + name].append("%s %s%s %s-%s port %d: %s" % (
                rec.kind, rec.detail, " (direct)" if rec.direct and self.cluster else "", _clock(rec.sent),
                _clock(rec.ended or rec.sent), rec.port, text))

        for rec in h.records:
            excused = self.hostile_excused(rec)
            first = rec.answers[0] if rec.answers else None
            by_kind[rec.kind][first[0] if first else "none"] += 1
            if first is None:
                # No answer: an idle connection may be closed (evicted, or timed out by HAProxy),
                # anything else must be answered unless a fault excuses it.
                if rec.kind == "idle" or excused:
                    counts["excused"] += rec.kind != "idle"
                else:
                    finding("no_answer", rec, rec.error or "no answer")
                continue
            counts["answers"] += len(rec.answers)
            status, api, body = first
            if not api and excused and status >= 500:
                counts["excused"] += 1  # HAProxy's own 502/503/504 during a fault
            elif status >= 500 and status != 503 and api and self.in_leader_fault(rec):
                # The API's 500 while the leader changes (a node that HAProxy sends connections to
                # a moment before it accepts writes: "read-only transaction"): counted and shown,
                # not failed on; the HA profiles are about exactly-once (see the docs).
                counts["failover_5xx"] += 1
                if counts["failover_5xx"] <= 5:
                    log("NOTE: %s %s-%s: %d from the API during a leader change: %r" % (
                        rec.kind, _clock(rec.sent), _clock(rec.ended or rec.sent), status, body[:160]))
            elif status >= 500 and status != 503:
                finding("5xx", rec, "%d from %s: %r" % (status, "the API" if api else "HAProxy", body[:200]))
            elif status not in rec.expected and not (status == 503 and rec.kind not in ("smuggle", "long_method")):
                finding("wrong_status", rec, "%d from %s, expected %s: %r" % (
                    status, "the API" if api else "HAProxy", sorted(rec.expected)[:6], body[:200]))
            for status, api, body in rec.answers[1:]:
                if status >= 500 and status != 503 and (api or not excused) and not (
                        api and self.in_leader_fault(rec)):
                    finding("5xx", rec, "later answer %d from %s: %r" % (status, "the API" if api else "HAProxy",
                                                                         body[:200]))
            if rec.strict:
                if rec.direct:
                    # Straight to the API: the one answer, then the close; the pipelined request
                    # must never be answered.
                    if len(rec.answers) > 1 or rec.rest:
                        finding("second_answers", rec, "%d answers %s and %d more bytes %r" % (
                            len(rec.answers), [a[0] for a in rec.answers], len(rec.rest), rec.rest[:100]))
                    elif not rec.closed:
                        finding("unclosed", rec, "connection still open %.1fs after the answer" % (2.0 * self.slow))
                else:
                    # Through HAProxy: it frames requests itself and may keep the client's
                    # connection after the API refused one (the API closes its own side, so the
                    # two cannot disagree about where the next request starts). Then HAProxy
                    # sends the pipelined GET /healthz to an API as the request it is: at most
                    # that one more answer, and it must be /healthz's.
                    later = rec.answers[1:]
                    if rec.rest or len(later) > 1 or any(
                            a[2] != b'{"status":"ok"}' and not (excused and not a[1]) for a in later):
                        finding("second_answers", rec, "answers %s %r and %d more bytes" % (
                            [a[0] for a in rec.answers], [a[2][:80] for a in later], len(rec.rest)))

        # 7. Rows.
        hostile_id = self.user_ids[self.hostile_user[0]]
        flood = set(h.flood_keys)
        bad_rows = {}
        for k in keys:
            if HOSTILE_PREFIX in k["idempotency_key"]:
                bad_rows[k["id"]] = "key row %d %r of user %d holds the invalid-shape prefix" % (
                    k["id"], k["idempotency_key"], k["user_id"])
            elif k["user_id"] == hostile_id and k["idempotency_key"] not in flood:
                bad_rows[k["id"]] = "key row %d %r of the hostile user was never sent as a valid key" % (
                    k["id"], k["idempotency_key"])
        hostile_key_ids = {k["id"] for k in keys if k["user_id"] == hostile_id and k["idempotency_key"] in flood}
        for r in rides:
            if r["user_id"] == hostile_id and r["idempotency_key_id"] not in hostile_key_ids:
                bad_rows["ride %d" % r["id"]] = "ride %d of the hostile user has key row %s, no key of its flood" % (
                    r["id"], r["idempotency_key_id"])
        flood_payment_keys = {k["payment_idempotency_key"] for k in keys if k["id"] in hostile_key_ids}
        for c in charges:
            if c.get("customer") == self.hostile_user[1] and c["idempotency_key"] not in flood_payment_keys:
                bad_rows["charge " + c["id"]] = "charge %s of the hostile customer (payment key %s) is no flood key's" % (
                    c["id"], c["idempotency_key"])
        for text in bad_rows.values():
            findings["hostile_rows"].append(text)
        keys_by_user_key = {(k["user_id"], k["idempotency_key"]): k for k in keys}
        mismatched = 0
        for key, status, body in h.flood_answers:
            k = keys_by_user_key.get((hostile_id, key))
            stored = (k["response_body"] or "").encode() if k else None
            if k is None or k["response_code"] != status or stored != body:
                mismatched += 1
                findings["hostile_mismatched_answers"].append("flood key %s: got %d %r, stored %s %r" % (
                    key, status, body[:200], k and k["response_code"], stored and stored[:200]))

        bounds = self.check_hostile_bounds(keys, hostile_id, finding, findings)

        log("hostile probes: %s" % ", ".join("%s=%d" % kv for kv in sorted(h.kinds.items())))
        for kind, statuses in sorted(by_kind.items()):
            log("hostile %s first answers: %s" % (kind, ", ".join(
                "%s=%d" % kv for kv in sorted(statuses.items(), key=lambda x: str(x[0])))))
        result = collections.OrderedDict()
        result["hostile_probes"] = len(h.records)
        result["hostile_answers"] = counts["answers"]
        result["hostile_excused"] = counts["excused"]
        result["hostile_5xx"] = counts["5xx"]
        result["hostile_wrong_status"] = counts["wrong_status"]
        result["hostile_second_answers"] = counts["second_answers"]
        result["hostile_unclosed"] = counts["unclosed"]
        result["hostile_no_answer"] = counts["no_answer"]
        result["hostile_rows"] = len(bad_rows)
        result["hostile_mismatched_answers"] = mismatched
        result.update(bounds)
        if self.ha:
            result["hostile_failover_5xx"] = counts["failover_5xx"]
        return result

    def check_hostile_bounds(self, keys, hostile_id, finding, findings):
        """8. The bounds the hostile floods meet (docs/http-api.md, "Hostile clients"):
        - a burst of unknown tokens got at most twice AUTH_FAILURES_PER_MINUTE 401s from each API it
          could reach (its minute may end inside the burst), the rest 429 with Retry-After;
        - no good client ever got the 429 of failed authentications: the API throttled the hostile
          client's address, not HAProxy's, which every client shares in the cluster profile;
        - every key row's origin_ip is its client's own address (HOSTILE_ADDRESS for the hostile
          user, GOOD_ADDRESS for the others), through HAProxy too (API_TRUSTED_PROXIES);
        - of a burst of waiters on one key, at most IDEMPOTENCY_MAX_WAITERS_PER_USER waited;
        - every 429 of either kind of burst carries Retry-After."""
        h = self.hostile
        counts = collections.Counter()

        def bound_finding(name, rec, text):
            counts[name] += 1
            finding(name, rec, text)

        for apis, records in h.token_bursts:
            if not records or any(self.hostile_excused(r) for r in records):
                counts["token_bursts_excused"] += 1
                continue
            counts["token_bursts"] += 1
            unauthorized = sum(1 for r in records if r.answers and r.answers[0][0] == 401)
            counts["token_burst_401s"] += unauthorized
            if unauthorized > 2 * AUTH_FAILURES_PER_MINUTE * apis:
                bound_finding("auth_unthrottled", records[0], "%d of %d unknown tokens answered 401 (bound %d for %d API%s)" % (
                    unauthorized, len(records), 2 * AUTH_FAILURES_PER_MINUTE * apis, apis, "s" if apis > 1 else ""))
        # Every 429 of either kind of burst, checked or not, says when to come back.
        bursts = [records for _, records in h.token_bursts] + [[first] + waiters for first, waiters in h.waiter_bursts]
        for r in (r for records in bursts for r in records):
            if r.answers and r.answers[0][0] == 429 and not r.headers.get("retry-after", "").isdigit():
                finding("no_retry_after", r, "429 without Retry-After: %r" % (r.answers[0][2][:120],))
        for sent, key in self.traffic.auth_throttled:
            findings["good_client_auth_throttled"].append("%s key %s: 429 for failed authentications" % (
                _clock(sent), key))
        for k in keys:
            want = HOSTILE_ADDRESS if k["user_id"] == hostile_id else GOOD_ADDRESS
            if k["origin_ip"] != want:
                counts["wrong_origin_ip"] += 1
                findings["wrong_origin_ip"].append("key row %d of user %d: origin_ip %s, the client was %s" % (
                    k["id"], k["user_id"], k["origin_ip"], want))
        for first, waiters in h.waiter_bursts:
            answered = [r for r in waiters if r.answers]
            # The bound holds for the requests that waited and are not answered yet: a request
            # holds its place from its first wait until its answer, also when woken while the key
            # is still in flight and parked again, so a place frees only when a waiter is answered.
            # If the first request finished the key (201 or 402), every waiter then replays and a
            # later arrival replays at once; if it left the key unfinished (a 503 in a provider
            # outage), a woken waiter resumes the key and answers, and a later arrival may wait in
            # the place that answer freed, so more than the bound may wait one after another. The
            # same holds when a waiter's wait ran out (its 409 freed a place while the key was
            # still in flight, the first request having taken longer than wait=2). Only bursts
            # where every waited request was answered by the finished key are counted: each then
            # took its place before the key finished and held it until after, so all held at once.
            timed_out = [r for r in answered if r.answers[0][0] == 409 and r.ended - r.sent >= 1.5]
            if (not waiters or len(answered) < len(waiters) or any(self.hostile_excused(r) for r in waiters + [first])
                    or max(r.sent for r in waiters) - min(r.sent for r in waiters) > 0.25
                    or not first.answers or first.answers[0][0] not in (201, 402) or timed_out):
                continue  # a fault, a burst that did not arrive at once, or a key resumed by or outliving a waiter
            counts["waiter_bursts"] += 1
            # Waited: its answer says so (Preference-Applied). A key that finished before the burst
            # came answers replays at once.
            waited = [r for r in waiters if "preference-applied" in r.headers]
            counts["waiter_burst_waited"] += len(waited)
            if len(waited) > IDEMPOTENCY_MAX_WAITERS_PER_USER:
                bound_finding("waiters_unbounded", first, "%d of %d requests waited for key %s (bound %d)" % (
                    len(waited), len(waiters), first.key, IDEMPOTENCY_MAX_WAITERS_PER_USER))
        log("hostile bounds: %d token bursts checked (%d excused, %d 401s in all), %d waiter bursts checked "
            "(%d waited in all)" % (counts["token_bursts"], counts["token_bursts_excused"], counts["token_burst_401s"],
                                    counts["waiter_bursts"], counts["waiter_burst_waited"]))
        result = collections.OrderedDict()
        result["hostile_auth_unthrottled"] = counts["auth_unthrottled"]
        result["hostile_waiters_unbounded"] = counts["waiters_unbounded"]
        result["good_client_auth_throttled"] = len(self.traffic.auth_throttled)
        result["wrong_origin_ip"] = counts["wrong_origin_ip"]
        return result

    def in_leader_fault(self, rec):
        """Whether a probe overlaps an HA fault that moves the leader (plus a grace)."""
        if not self.ha:
            return False
        grace = 2.0 * self.slow
        ended = rec.ended if rec.ended is not None else rec.sent
        return any(kind in HA_LEADER_FAULT_KINDS and rec.sent <= end + grace and ended >= start
                   for kind, start, end in self.fault_windows)

    # -- the run --------------------------------------------------------------------------------

    def run(self):
        args = self.args
        self.unexpected_exits = []
        started = time.time()
        self.setup()
        log("setup took %.1fs; traffic for %ds with %d clients, fault rate %.1f/min" % (
            time.time() - started, args.duration, args.clients, args.fault_rate))
        request_timeout = 5.0 * self.slow
        # The cluster's clients know only HAProxy; the others pick an API themselves.
        ports = [self.front_port] if self.cluster else [d.port for d in self.apis]
        self.traffic = Traffic(ports, self.users, args.clients, self.seed,
                               self.profile["give_up"] * self.slow, request_timeout, keep_alive=self.cluster)
        self.traffic.start()
        # The hostile client goes where the good ones go; through HAProxy it also goes straight to
        # the APIs now and then, to see what the API itself does with each shape.
        self.hostile = Hostile(ports, [d.port for d in self.apis], self.hostile_user[2], self.seed, 2,
                               request_timeout, self.slow)
        self.hostile.start()
        self.traffic_window = [time.time(), None]
        if self.ha:
            self.run_ha_faults(args.duration)
        else:
            self.run_faults(args.duration)
        self.traffic_window[1] = time.time()
        self.traffic.stop_new.set()
        self.hostile.stop_new.set()
        log("faults stopped (%s); waiting for clients to reach an answer or give up" % dict(self.faults))
        # Clients stop at their give-up bound; the provider is healthy again from here on.
        self.mock_config(failure_rate=0, latency_ms=0, drop_rate=0)
        if not self.traffic.join(self.profile["give_up"] * self.slow + request_timeout + 30):
            log("WARNING: clients still running; aborting them")
            self.traffic.abort.set()
            self.traffic.join(request_timeout + 5)
        if not self.hostile.join(request_timeout * 3 + 30):
            log("WARNING: the hostile client still runs; aborting it")
            self.hostile.abort.set()
            self.hostile.join(request_timeout * 2 + 10)
        if self.traffic.errors:
            raise HarnessError("client thread failed:\n" + "\n".join(self.traffic.errors))
        if self.hostile.errors:
            raise HarnessError("hostile client thread failed:\n" + "\n".join(self.hostile.errors))
        log("traffic done after %.1fs; quiescing" % (time.time() - started))
        q_started = time.time()
        quiet = self.quiesce(self.profile["quiesce"] * self.slow)
        log("quiesced=%s in %.1fs" % (quiet, time.time() - q_started))
        if self.monitor is not None:
            self.monitor.stop()
        if self.ha:
            # The checker reads the final leader itself (and the provider's records), not the API.
            final = self.servers.pin()
            log("final leader %s; the checker reads its database" % final)
        planted = None
        if self.args.plant_violations:
            planted = self.plant_ha_violations() if self.ha else self.plant_violations()
        result, findings, statuses, stats = self.check()
        if self.ha and self.servers.leader() != self.servers.pinned:
            findings["harness"].append("the leader changed while the checker read %s" % self.servers.pinned)
        log("client statuses: %s" % ", ".join("%s=%d" % (s if s is not None else "no_answer", n)
                                              for s, n in sorted(statuses.items(), key=lambda x: str(x[0]))))
        log("provider stats: %s" % json.dumps(stats))
        log("faults: %s" % ", ".join("%s=%d" % kv for kv in sorted(self.faults.items())))
        for kind in self.available_kinds():
            if self.faults[kind] == 0:
                findings["coverage"].append("fault %s never injected" % kind)
        wanted_failovers = self.profile.get("failovers", 0) if self.servers.sentinel else 0
        if self.faults["redis_failover"] < wanted_failovers:
            findings["coverage"].append("%d Redis failovers of the %d the profile asks for" % (
                self.faults["redis_failover"], wanted_failovers))
        if self.ha:
            for text in self.ha_warnings:
                findings["cluster_unhealthy"].append(text)
            wanted = self.profile.get("min_failovers", 3)
            if result["failovers"] < wanted:
                findings["coverage"].append("%d leader changes observed, at least %d wanted" % (
                    result["failovers"], wanted))
        failed = bool(findings)
        for name, items in sorted(findings.items()):
            log("FINDING %s (%d):" % (name, len(items)))
            for item in items[:20]:
                log("  " + item)
        summary = " ".join("%s=%s" % kv for kv in result.items())
        if self.ha:
            code = self.ha_verdict(result, findings, summary, started, planted)
            return self.ha_self_test(code) if self.args.self_test else code
        if self.args.plant_violations:
            # The checker must see each planted break; anything else it reports is a real one.
            expected = {"duplicates": 1, "orphan_charges": 1, "lost_jobs": 1, "stuck_keys": 1,
                        "mismatched_answers": 1, "double_refunds": 1, "refund_violations": 2}
            if self.cluster:
                expected["restart_errors"] = 1
            expected.update(hostile_rows=1, hostile_5xx=1, hostile_second_answers=1, hostile_auth_unthrottled=1,
                            good_client_auth_throttled=1, wrong_origin_ip=1, hostile_waiters_unbounded=1)
            missed = [name for name, least in expected.items() if result[name] < least]
            verdict = "CHECKER_MISSED_%s" % ",".join(missed) if missed else "CHECKER_OK"
            print("%s seed=%d elapsed=%.0fs planted=%d result=%s" % (
                summary, self.seed, time.time() - started, len(expected), verdict))
            sys.stdout.flush()
            return 1 if missed else 0
        print("%s seed=%d elapsed=%.0fs result=%s" % (summary, self.seed, time.time() - started,
                                                       "FAIL" if failed else "PASS"))
        sys.stdout.flush()
        return 1 if failed else 0

    def plant_violations(self):
        """Breaks each invariant once, behind the product's back, so that a run shows the
        checker finds them (--plant-violations; the run passes only if all are reported)."""
        # The daemons would repair what we break (the completer re-drives a stuck key): stop them.
        for d in self.completers + self.enqueuers:
            d.stop(grace=10.0)
        # The good clients' keys (the hostile user's flood has 201s too; its plants are below).
        paid = self.servers.psql_json(
            "SELECT id, user_id, idempotency_key FROM idempotency_keys WHERE response_code = 201 AND user_id <> %d "
            "ORDER BY id LIMIT 3" % self.user_ids[self.hostile_user[0]])
        if len(paid) < 3:
            raise HarnessError("too few paid keys to plant violations")
        customer = next(u[1] for u in self.users if not u[3])
        # 1. A second charge for a paid request, under another provider idempotency key.
        body = urllib.parse.urlencode([("amount", "100"), ("currency", "usd"), ("customer", customer),
                                       ("description", "Rocket Rides ride")])
        status, _, data = http_call(self.mock_port, "POST", "/v1/charges", body, {
            "Authorization": "Bearer " + STRIPE_KEY, "Idempotency-Key": "planted-" + uuid.uuid4().hex,
            "Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
        if status != 200:
            raise HarnessError("planting a charge: %d %r" % (status, data[:200]))
        # 2. A lost job: remove the job of the second paid key's ride from Redis.
        ride = self.servers.psql("SELECT id FROM rides WHERE idempotency_key_id = %d" % paid[1]["id"]).strip()
        out = self.servers.redis_cli("--raw", "LRANGE", "queue:default", "0", "-1", timeout=60).stdout.decode()
        for line in out.splitlines():
            try:
                job = json.loads(line)
            except ValueError:
                continue
            if job.get("args") and isinstance(job["args"][0], dict) and str(job["args"][0].get("ride_id")) == ride:
                self.servers.redis_cli("LREM", "queue:default", "0", line)
        # 8. Two refunds of one charge, neither under its ride's refund key (partial ones, which the
        # provider accepts for a charge not refunded in full).
        charge = self.servers.psql("SELECT stripe_charge_id FROM rides WHERE idempotency_key_id = %d"
                                   % paid[1]["id"]).strip()
        for _ in range(2):
            body = urllib.parse.urlencode([("charge", charge), ("amount", "100")])
            status, _, data = http_call(self.mock_port, "POST", "/v1/refunds", body, {
                "Authorization": "Bearer " + STRIPE_KEY, "Idempotency-Key": "planted-" + uuid.uuid4().hex,
                "Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
            if status != 200:
                raise HarnessError("planting a refund: %d %r" % (status, data[:200]))
        log("planted: two refunds of charge %s under keys of no ride" % charge)
        # 3. A stuck key, and 4. a stored answer that differs from the client's.
        self.servers.psql("UPDATE idempotency_keys SET recovery_point = 'charge_created', response_code = NULL, "
                          "response_body = NULL, locked_at = now() WHERE id = %d" % paid[2]["id"])
        self.servers.psql("UPDATE idempotency_keys SET response_body = response_body || ' ' "
                          "WHERE id = (SELECT max(id) FROM idempotency_keys WHERE response_code = 402)")
        log("planted: a second charge for key %d, the lost job of key %d, key %d unfinished and locked, "
            "a changed stored 402" % (paid[0]["id"], paid[1]["id"], paid[2]["id"]))
        # 6. A smuggling probe straight to an API that got a 500 and then a second answer, and
        # 7. a key row with the invalid-shape prefix (as if an invalid request had written it).
        planted = HostileRecord("smuggle", self.apis[0].port, True, {400}, strict=True, detail="planted")
        planted.ended = planted.sent + 0.01
        planted.closed = True
        planted.answers = [(500, True, b'{"error":{"type":"api_error","message":"planted"}}'),
                           (200, True, b'{"status":"ok"}')]
        self.hostile._add(planted)
        self.servers.psql(
            "INSERT INTO idempotency_keys (idempotency_key, locked_at, request_method, request_params, request_path, "
            "response_code, response_body, recovery_point, user_id, origin_ip) VALUES ('%splanted-%s', NULL, 'POST', '{}', "
            "'/rides', 402, '{}', 'finished', %d, '%s')" % (HOSTILE_PREFIX, uuid.uuid4().hex,
                                                            self.user_ids[self.hostile_user[0]], HOSTILE_ADDRESS))
        log("planted: a 500 and a second answer on a smuggling connection, a key row with the prefix %s"
            % HOSTILE_PREFIX)
        # 8. The bounds: a burst of unknown tokens answered 401 one more time than the bound lets
        # through, a good client's 429 for failed authentications, a key row stored with another
        # address than its client's, and one waiter more than IDEMPOTENCY_MAX_WAITERS_PER_USER.
        now = time.time()

        def answered(kind, status, body, key=None, ended=now + 0.01):
            record = HostileRecord(kind, self.apis[0].port, True, {status}, strict=False, key=key, detail="planted")
            record.sent, record.ended = now, ended
            record.answers = [(status, True, body)]
            return record

        self.hostile.token_bursts.append((1, [answered("token_flood", 401, b'{"error":{}}')
                                              for _ in range(2 * AUTH_FAILURES_PER_MINUTE + 1)]))
        with self.traffic.lock:
            self.traffic.auth_throttled.append((now, "planted"))
        self.servers.psql("UPDATE idempotency_keys SET origin_ip = '192.0.2.1' WHERE id = %d" % paid[0]["id"])
        first = answered("waiter_flood", 201, b"{}", key="planted", ended=now + 0.5)
        waiters = [answered("waiter_flood", 201, b"{}", key="planted", ended=now + 0.5)
                   for _ in range(IDEMPOTENCY_MAX_WAITERS_PER_USER + 1)]
        for waiter in waiters:
            waiter.headers["preference-applied"] = "wait=2"  # each says it waited for the key
        self.hostile.waiter_bursts.append((first, waiters))
        log("planted: %d 401s in one token burst, a good client's 429 for failed authentications, origin_ip "
            "192.0.2.1 on key %d, %d waiters on one key" % (2 * AUTH_FAILURES_PER_MINUTE + 1, paid[0]["id"],
                                                            IDEMPOTENCY_MAX_WAITERS_PER_USER + 1))
        if self.cluster:
            # 5. A client that saw a 502 in the middle of a rolling restart.
            if not self.rolling_windows:
                raise HarnessError("no rolling restart to plant a client error in")
            start, end = self.rolling_windows[0]
            middle = (start + end) / 2
            with self.traffic.lock:
                self.traffic.client_errors.append((middle, middle + 0.01, 502, "planted"))
            log("planted: a 502 at %s, inside the rolling restart of %s-%s" % (
                _clock(middle), _clock(start), _clock(end)))

    def cleanup(self, keep):
        if self.cluster:
            if getattr(self, "cluster_started", False):
                result = run([CLUSTER, "stop", self.cluster_dir], timeout=300, check=False)
                if result.returncode != 0:
                    log("stopping the cluster: %s" % result.stderr.decode(errors="replace")[-2000:])
            if keep:
                log("logs kept in %s" % os.path.join(self.cluster_dir, "logs"))
            else:
                shutil.rmtree(self.work_dir, ignore_errors=True)
            return
        for d in self.apis + self.enqueuers + self.completers + ([self.mock] if self.mock else []):
            try:
                d.stop(grace=5.0)
            except Exception:
                pass
        try:
            self.servers.stop()
        except Exception as e:
            log("stopping servers: %s" % e)
        if keep:
            log("logs kept in %s" % self.work_dir)
        else:
            shutil.rmtree(self.work_dir, ignore_errors=True)


def _ip(*args, timeout=30):
    return subprocess.run(["ip"] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


def remove_netns(names):
    """Kills what still runs in each namespace (only this run's processes ever run there) and
    deletes it. Namespaces that are gone already are skipped."""
    listed = _ip("netns", "list").stdout.decode()
    present = {line.split()[0] for line in listed.splitlines() if line.strip()}
    for name in names:
        if name not in present:
            continue
        for _ in range(3):
            pids = [int(p) for p in _ip("netns", "pids", name).stdout.decode().split() if p.isdigit()]
            if not pids:
                break
            log("killing %d process(es) left in network namespace %s: %s" % (len(pids), name, pids))
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.5)
        result = _ip("netns", "delete", name)
        if result.returncode != 0:
            log("ip netns delete %s: %s" % (name, result.stderr.decode(errors="replace").strip()))


def run_in_netns(args, argv):
    """The HA profiles run inside a network namespace of their own (scripts/cluster.sh --ha
    --netns refuses the machine's initial one): this makes it (rrf<pid>, only lo, up), runs the
    suite again inside it with --inside-netns, and deletes it afterwards whatever happens, with
    the nodes' namespaces (rrf<pid>n1..3) if the cluster script left any. A guardian outside our
    process tree does the same if this process is killed outright."""
    name = "rrf%d" % os.getpid()
    names = ["%sn%d" % (name, i) for i in (1, 2, 3)] + [name]
    script = ('while kill -0 "$1" 2>/dev/null; do sleep 1; done; ip netns list | grep -q "^$2\\b" || exit 0; '
              'for i in $(seq 1 120); do [ -z "$(ip netns pids "$2" 2>/dev/null)" ] && break; sleep 1; done; '
              'for ns in "$2n1" "$2n2" "$2n3" "$2"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9; '
              'ip netns delete "$ns" 2>/dev/null; done; exit 0')
    subprocess.run(["setsid", "-f", "sh", "-c", script, "netns-guardian", str(os.getpid()), name],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    child = None
    stopping = []

    def on_signal(signum, _frame):
        stopping.append(signum)
        if child is not None and child.poll() is None:
            try:
                child.send_signal(signal.SIGTERM)
            except OSError:
                pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)
    try:
        for argv_ip in (["netns", "add", name], ["-n", name, "link", "set", "lo", "up"]):
            result = _ip(*argv_ip)
            if result.returncode != 0:
                log("HARNESS ERROR: ip %s: %s" % (" ".join(argv_ip), result.stderr.decode(errors="replace").strip()))
                return 2
        log("running inside network namespace %s" % name)
        inner = [sys.executable, os.path.abspath(__file__)] + list(argv) + [
            "--inside-netns", "--netns-prefix", name, "--seed", str(args.seed)]
        child = subprocess.Popen(["ip", "netns", "exec", name] + inner, stdin=subprocess.DEVNULL)
        while True:
            try:
                return child.wait()
            except Stop:
                pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=300)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        # The inner run's own guardian stops the cluster if the inner run died outright: give it
        # time to (the namespace empties), then kill whatever is left.
        deadline = time.time() + 120
        while time.time() < deadline and _ip("netns", "pids", name).stdout.strip():
            time.sleep(1)
        remove_netns(names)
        log("network namespaces %s removed" % ", ".join(names))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
            os.path.relpath(os.path.abspath(__file__)), args.profile, args.seed, os.path.abspath(args.bin_dir),
            replayed_flags(args)), flush=True)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import restore_drill
        return restore_drill.run(args, sys.modules[__name__])
    if PROFILES[args.profile].get("topology") == "ha" and not args.inside_netns:
        if os.geteuid() != 0:
            print("fault_suite: the HA profiles make network namespaces and need root", file=sys.stderr)
            return 2
        return run_in_netns(args, argv)
    print("fault_suite profile=%s seed=%d duration=%.0f clients=%d fault_rate=%.1f bin_dir=%s" % (
        args.profile, args.seed, args.duration, args.clients, args.fault_rate, os.path.abspath(args.bin_dir)))
    print("replay with: %s --profile %s --seed %d --duration %g --clients %d --fault-rate %g --bin-dir %s%s" % (
        os.path.relpath(os.path.abspath(__file__)), args.profile, args.seed, args.duration, args.clients,
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
