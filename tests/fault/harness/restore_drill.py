"""The restore profiles of the fault suite (restore-short, restore-long): a point-in-time restore in
the middle of real traffic, checked against the provider's records and the restored database.

Over the plain cluster (scripts/cluster.sh start, which archives WAL through pgBackRest):

  1. good clients book rides (some retry a request until they see an answer, some give up after a
     few tries), cancel some of them, and a hostile client sends requests that must write nothing;
  2. a full backup is taken mid-run, traffic goes on, and a restore point is noted between the
     backup and the end;
  3. the database is destroyed and restored (scripts/cluster.sh restore DIR --to TIME, then in a
     second round --latest), which closes writes until reconciliation has run over the restored
     window; the drill waits for writes to reopen;
  4. every client retries, with the same key, every request it never saw finish and a sample of
     those it did see finish;
  5. the checker reads the provider's records (/_mock/charges, /_mock/refunds) and the restored
     database, never the API's word, and prints one line:

     RESULT PASS|FAIL seed= restore_point= lost_by_restore= rebuilt= refunded= double_charges=
     double_refunds= orphan_charges= reused_ids= lost_acknowledged= lost_jobs= stuck_keys=

lost_by_restore counts the rides the database held before it was destroyed that were not in it right
after the restore (the restore's own reconciliation then rebuilds them: rebuilt and refunded are its
counts); orphan_charges the provider's charges with no ride and no refund; reused_ids the ride ids
answered to two different requests; lost_acknowledged the 201s and 200s a client saw before the
restore whose retry afterwards does not answer the same ride. With --self-test (or
--plant-violations), after that verdict, an orphan charge and a reused id are planted and a second check over the same records must
report both (RESULT ... planted=orphan_charges:caught,reused_ids:caught), or the run fails.
"""

import collections
import datetime
import json
import os
import random
import shutil
import tempfile
import threading
import time
import urllib.parse
import uuid

from rrsuite import cluster, daemons

from .base import CLUSTER, STRIPE_KEY, HarnessError, log, run as run_command
from .net import http_call
from .restore_checker import HOSTILE_KEY_PREFIX, check_restore
from .traffic import random_ride_params


PROFILES = {
    # seconds of traffic before the backup, after it, and per round; clients; cancel share
    "restore-short": dict(before=20, after=20, clients=6, rounds=("to", "latest")),
    "restore-long": dict(before=300, after=300, clients=24, rounds=("to", "latest", "to")),
    # The checker's self-test alone: one short round, then the plants.
    "restore-plant": dict(before=8, after=8, clients=4, rounds=("to",)),
}
RETRY_SAMPLE = 0.3  # share of the requests a client saw finish that it retries after the restore


def utc(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Request:
    """One request of one client: its key, what it asks, and every answer it got."""

    def __init__(self, user, kind, path, params):
        self.user = user  # (email, token)
        self.kind = kind  # "ride" or "cancel"
        self.key = "restore-%s" % uuid.uuid4().hex
        self.path = path
        self.params = params
        self.answers = []  # (time, status, ride id or None, round)

    def final(self, before=None):
        """The last final answer (201, 402, 200, 404, 422), or None."""
        for t, status, ride, rnd in reversed(self.answers):
            if status in (200, 201, 402, 404, 422) and (before is None or t < before):
                return status, ride, rnd
        return None


class Clients:
    """Good clients over HAProxy, and one hostile client; records everything they were told."""

    def __init__(self, port, users, hostile_token, seed, count):
        self.port = port
        self.users = users
        self.hostile_token = hostile_token
        self.rng = random.Random(seed)
        self.count = count
        self.requests = []
        self.hostile_sent = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.round = 0
        self.threads = []

    def send(self, req, timeout=10.0):
        headers = {"Authorization": "Bearer " + req.user[1], "Idempotency-Key": req.key,
                   "Content-Type": "application/x-www-form-urlencoded"}
        try:
            status, _, data = http_call(self.port, "POST", req.path, urllib.parse.urlencode(req.params),
                                           headers, timeout=timeout)
        except OSError:
            return None
        ride = None
        if status in (200, 201):
            try:
                ride = json.loads(data)["ride"]["id"]
            except (ValueError, KeyError, TypeError):
                ride = "unreadable"
        with self.lock:
            req.answers.append((time.time(), status, ride, self.round))
        return status

    def _client(self, index):
        rng = random.Random(self.rng.random())
        patient = index % 2 == 0  # retries until it sees an answer; the others give up after 2 tries
        while not self.stop.is_set():
            user = rng.choice(self.users)
            req = Request(user, "ride", "/rides", random_ride_params(rng))
            with self.lock:
                self.requests.append(req)
            self._until_final(req, patient)
            final = req.final()
            if final and final[0] == 201 and isinstance(final[1], int) and rng.random() < 0.3:
                cancel = Request(user, "cancel", "/rides/%d/cancel" % final[1], [("reason", "drill")])
                with self.lock:
                    self.requests.append(cancel)
                self._until_final(cancel, patient)

    def _until_final(self, req, patient):
        for attempt in range(40 if patient else 2):
            if self.stop.is_set() and attempt > 0:
                return
            status = self.send(req)
            if status in (200, 201, 402, 404, 422):
                return
            time.sleep(0.2 + 0.1 * attempt)

    def _hostile(self):
        rng = random.Random(self.rng.random())
        while not self.stop.is_set():
            key = HOSTILE_KEY_PREFIX + uuid.uuid4().hex
            body, ctype = rng.choice([("origin_lat=1.5", "application/x-www-form-urlencoded"),
                                      ('{"origin_lat":1.5,"origin_lat":1.5}', "application/json"),
                                      ("{not json", "application/json"),
                                      (urllib.parse.urlencode(random_ride_params(rng)) + "\x00", "text/plain")])
            headers = {"Authorization": "Bearer " + self.hostile_token, "Idempotency-Key": key,
                       "Content-Type": ctype}
            try:
                http_call(self.port, "POST", "/rides", body, headers, timeout=5)
            except OSError:
                pass
            self.hostile_sent += 1
            self.stop.wait(0.05)

    def start(self):
        self.stop.clear()
        self.threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(self.count)]
        self.threads.append(threading.Thread(target=self._hostile, daemon=True))
        for t in self.threads:
            t.start()

    def halt(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)


class Drill:
    def __init__(self, args, profile):
        self.args = args
        self.profile = profile
        self.seed = args.seed
        self.work = tempfile.mkdtemp(prefix="rocket-rides-restore.")
        os.chmod(self.work, 0o755)  # PostgreSQL runs as postgres, under it
        self.cluster_dir = os.path.join(self.work, "cluster")
        self.bin_dir = os.path.abspath(args.bin_dir)
        self.env = None
        self.exports = {}
        self.counts = collections.Counter()
        self.findings = collections.defaultdict(list)
        self.restore_points = []
        self.snapshots = []  # ride ids the database held before each destruction

    # -- the cluster -------------------------------------------------------------------------
    def cluster(self, *argv, timeout=600, check=True):
        return run_command([CLUSTER] + list(argv), env=self.env, timeout=timeout, check=check)

    def psql_json(self, sql):
        out = run_command(["psql", self.exports["DIRECT_DATABASE_URL"], "-XAtqc",
                      "SELECT coalesce(json_agg(t), '[]'::json) FROM (%s) t" % sql], timeout=120).stdout
        return json.loads(out.decode())

    def start(self):
        api = os.path.join(self.bin_dir, "rocket-rides-api")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(cluster.OWNED_PREFIXES)}
        self.env.update({"STRIPE_API_KEY": STRIPE_KEY, "STRIPE_TIMEOUT": "2", "COMPLETER_MIN_AGE": "2",
                         "COMPLETER_LAST_RUN_THRESHOLD": "1", "COMPLETER_IDLE_SLEEP": "1",
                         "ENQUEUER_IDLE_SLEEP": "1", "MOCK_SEED": str(self.seed % (2 ** 62))})
        self.env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        log("starting the cluster in %s" % self.cluster_dir)
        self.exports = cluster.start(self.cluster_dir, self.bin_dir, self.env, timeout=600)
        self.front = int(self.exports["HAPROXY_PORT"])
        self.mock = int(self.exports["STRIPE_MOCK_PORT"])
        user_env = dict(self.env, DATABASE_URL=self.exports["DATABASE_URL"], DATABASE_PREPARED_STATEMENTS="off")
        users = []
        for i in range(3):
            email = "restore-%d-%d@example.com" % (i, self.seed % 100000)
            users.append(("restore-%d" % i, daemons.create_user(api, user_env, email, "cus_restore_%d" % i, timeout=120)))
        hostile = daemons.create_user(api, user_env, "restore-hostile@example.com", "cus_restore_hostile", timeout=120)
        self.clients = Clients(self.front, users, hostile, self.seed,
                               self.profile["clients"])

    def stop(self):
        cluster.stop(self.cluster_dir, env=self.env)

    # -- one round: traffic, backup, traffic, destroy and restore -----------------------------
    def writes_open(self, timeout):
        """Waits until a write is accepted again (a 503 while the fence is closed); seconds waited."""
        started = time.time()
        probe = Request(self.clients.users[0], "ride", "/rides", random_ride_params(random.Random(1)))
        probe.key = "restore-probe-%s" % uuid.uuid4().hex
        while time.time() - started < timeout:
            status = self.clients.send(probe, timeout=5)
            if status in (201, 402):
                with self.clients.lock:
                    self.clients.requests.append(probe)
                return time.time() - started
            time.sleep(0.5)
        raise HarnessError("writes did not reopen within %ds after the restore" % timeout)

    def round(self, number, mode, rng):
        self.clients.round = number
        self.clients.start()
        time.sleep(self.profile["before"])
        log("round %d: full backup" % number)
        started = time.time()
        self.cluster("backup", self.cluster_dir, "--full", timeout=600)
        backup_done = time.time()
        log("round %d: backup took %.1fs" % (number, backup_done - started))
        after = self.profile["after"]
        point = backup_done + rng.uniform(0.3, 0.7) * after
        time.sleep(after)
        self.clients.halt()
        # What the database held before it was destroyed.
        held = {r["id"] for r in self.psql_json("SELECT id FROM rides")}
        if mode == "to":
            target = utc(point)
            argv = ["restore", self.cluster_dir, "--to", target]
        else:
            target = "latest"
            argv = ["restore", self.cluster_dir, "--latest"]
        log("round %d: destroying the database and restoring %s" % (number, target))
        started = time.time()
        result = self.cluster(*argv, timeout=900)
        log("round %d: restore took %.1fs" % (number, time.time() - started))
        output = result.stdout.decode() + result.stderr.decode()
        summary = self.summary_of(output)
        reopened = self.writes_open(180)
        log("round %d: writes reopened %.1fs after the restore; reconciliation: %s" % (number, reopened, summary))
        now_held = {r["id"] for r in self.psql_json("SELECT id FROM rides")}
        rebuilt = {r["ride_id"] for r in self.psql_json(
            "SELECT ride_id FROM reconciliation_breaks WHERE action = 'ride_rebuilt' AND ride_id IS NOT NULL "
            "AND found_at >= to_timestamp(%f)" % started)}
        self.counts["lost_by_restore"] += len((held - now_held) | (held & rebuilt))
        self.counts["rebuilt"] += summary.get("rebuilt", 0)
        self.counts["refunded"] += summary.get("refunded", 0)
        self.restore_points.append(target)
        self.retry_after_restore(number, rng)

    @staticmethod
    def summary_of(output):
        for line in output.splitlines():
            fields = dict(p.partition("=")[::2] for p in line.split() if "=" in p)
            if {"matched", "rebuilt", "refunded", "breaks"} <= fields.keys():
                try:
                    return {k: int(fields[k]) for k in ("matched", "rebuilt", "refunded", "breaks")}
                except ValueError:
                    pass
        raise HarnessError("the restore printed no reconciliation summary (matched= rebuilt= refunded= "
                              "breaks=):\n" + output[-3000:])

    def retry_after_restore(self, number, rng):
        """Every request never seen finished, and a sample of those seen finished, once more."""
        with self.clients.lock:
            todo = [r for r in self.clients.requests if r.final() is None or rng.random() < RETRY_SAMPLE]
        log("round %d: %d requests retried after the restore" % (number, len(todo)))
        self.clients.round = number + 0.5
        for req in todo:
            self.clients._until_final(req, patient=True)

    # -- the checker --------------------------------------------------------------------------
    def check(self):
        """Records what the provider, the restored database and Redis hold, and has the restore
        checker (restore_checker.py) judge it with what the clients were told."""
        keys = self.psql_json("SELECT user_id, idempotency_key, recovery_point, response_code FROM idempotency_keys")
        rides = self.psql_json("SELECT id, stripe_charge_id, stripe_refund_id FROM rides")
        charges = json.loads(http_call(self.mock, "GET", "/_mock/charges", timeout=60)[2])
        refunds = json.loads(http_call(self.mock, "GET", "/_mock/refunds", timeout=60)[2])
        out = run_command(["redis-cli", "-u", self.exports["REDIS_URL"], "--raw", "LRANGE", "queue:default", "0",
                           "-1"], timeout=120).stdout.decode()
        counts, findings = check_restore(keys, rides, charges, refunds, self.clients.requests, out.splitlines())
        self.counts.update(counts)
        for name, lines in findings.items():
            self.findings[name].extend(lines)


    def wait_quiet(self, timeout=120):
        """Until the completer and the enqueuer have nothing left: no unfinished key, nothing staged."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            left = self.psql_json("SELECT (SELECT count(*) FROM idempotency_keys WHERE recovery_point <> 'finished') "
                                  "+ (SELECT count(*) FROM staged_jobs) AS n")[0]["n"]
            if left == 0:
                return True
            time.sleep(1)
        return False

    def plant(self):
        """An orphan charge at the provider, and a ride id answered to a second request."""
        body = urllib.parse.urlencode([("amount", "2000"), ("currency", "usd"), ("customer", "cus_restore_0")])
        status, _, data = http_call(self.mock, "POST", "/v1/charges", body, {
            "Authorization": "Bearer " + STRIPE_KEY, "Idempotency-Key": "planted-" + uuid.uuid4().hex,
            "Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
        if status != 200:
            raise HarnessError("planting a charge: %d %r" % (status, data[:200]))
        rides = [r for r in self.clients.requests if r.kind == "ride" and r.final() and r.final()[0] == 201]
        if rides:
            twin = Request(rides[0].user, "ride", "/rides", [])
            twin.answers.append((time.time(), 201, rides[0].final()[1], 99))
            self.clients.requests.append(twin)

    def run(self):
        rng = random.Random(self.seed)
        started = time.time()
        self.start()
        for number, mode in enumerate(self.profile["rounds"], 1):
            self.round(number, mode, rng)
        quiet = self.wait_quiet()
        if not quiet:
            log("the completer and enqueuer did not reach quiet in 120s")
        self.check()
        c = collections.Counter(self.counts)
        names = ["lost_by_restore", "rebuilt", "refunded", "double_charges", "double_refunds", "orphan_charges",
                 "reused_ids", "lost_acknowledged", "lost_jobs", "stuck_keys"]
        must_be_zero = names[3:]
        for name, lines in sorted(self.findings.items()):
            log("FINDING %s (%d):" % (name, len(lines)))
            for line in lines[:10]:
                log("  " + line)
        failed = any(c[n] for n in must_be_zero) or bool(self.findings.get("hostile_rows"))
        planted = ""
        if self.args.plant_violations or self.args.self_test:
            # The checker's self-test, after the real verdict: the plants must each be found by a
            # second check over the same records, or the run fails.
            self.plant()
            self.counts = collections.Counter()
            self.findings = collections.defaultdict(list)
            self.check()
            caught = {name: self.counts[name] >= 1 for name in ("orphan_charges", "reused_ids")}
            planted = " planted=" + ",".join("%s:%s" % (n, "caught" if ok else "missed") for n, ok in caught.items())
            failed = failed or not all(caught.values())
        print("RESULT %s seed=%d restore_point=%s %s requests=%d hostile=%d elapsed=%ds%s" % (
            "FAIL" if failed else "PASS", self.seed, ",".join(self.restore_points),
            " ".join("%s=%d" % (n, c[n]) for n in names), len(self.clients.requests), self.clients.hostile_sent,
            time.time() - started, planted), flush=True)
        return 1 if failed else 0


def run(args):
    """The restore profile args.profile; the exit code (0 pass, 1 a finding, 2 the harness failed)."""
    drill = Drill(args, PROFILES[args.profile])
    code = 2
    try:
        code = drill.run()
    except HarnessError as e:
        log("HARNESS ERROR: %s" % e)
    finally:
        drill.stop()
        if code == 0 and not args.keep:
            shutil.rmtree(drill.work, ignore_errors=True)
        else:
            log("logs kept in %s" % drill.work)
    return code
