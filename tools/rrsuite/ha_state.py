"""What the HA shape (scripts/cluster.sh start --ha) is doing now, as an operator asks it: who
holds the leader lock in etcd, which node HAProxy sends PostgreSQL connections to and whether it
answers there as a primary, which standbys stream from the leader, each node's line for `status`,
and the waits built on them. Everything here reads; nothing starts or stops."""

import json
import subprocess
import time
import urllib.error
import urllib.request

from . import haproxy, node_postgres, postgres
from .clusterdir import NODES, ClusterError, say
from .process import HarnessError, http_status

# Patroni's keys in etcd live under /service/SCOPE/ (deploy/patroni.yml.in's scope).
SCOPE_PREFIX = "/service/rocket-rides/"


def rest_url(cluster, n):
    return "http://%s:%s" % (cluster.node_address(n), cluster.conf["NODE%d_REST_PORT" % n])


def etcd_endpoints(cluster):
    return ",".join("http://%s:%s" % (cluster.node_address(n), cluster.conf["NODE%d_ETCD_CLIENT_PORT" % n])
                    for n in NODES)


def etcdctl(cluster, *args, timeout=10):
    """etcdctl (API 3) against the three members, with bounds short enough for a wait loop."""
    return subprocess.run(["etcdctl", "--endpoints=" + etcd_endpoints(cluster), "--dial-timeout=1s",
                           "--command-timeout=2s"] + list(args), env={"ETCDCTL_API": "3", "PATH": "/usr/bin:/bin"},
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def clear_keys(cluster):
    """The cluster's keys in etcd deleted (a restored node then takes the cluster over afresh)."""
    result = etcdctl(cluster, "del", "--prefix", SCOPE_PREFIX)
    if result.returncode != 0:
        raise ClusterError("etcdctl del --prefix %s failed: %s" % (
            SCOPE_PREFIX, result.stderr.decode(errors="replace").strip()))


def leader_name(cluster):
    """The holder of the leader lock in etcd (what Patroni's own view comes from), or None."""
    try:
        result = etcdctl(cluster, "get", "--print-value-only", SCOPE_PREFIX + "leader")
    except subprocess.TimeoutExpired:
        return None
    lines = result.stdout.decode(errors="replace").splitlines()
    return lines[0] if result.returncode == 0 and lines and lines[0] else None


def etcd_healthy(cluster):
    try:
        return etcdctl(cluster, "endpoint", "health").returncode == 0
    except subprocess.TimeoutExpired:
        return False


def poll(probe, seconds, interval=0.2):
    """probe() every `interval` until it returns something true; that, or None after `seconds`."""
    for _ in range(int(seconds / interval)):
        value = probe()
        if value:
            return value
        time.sleep(interval)
    return None


def wait_etcd_healthy(cluster, seconds):
    """Until a majority of the members answers: a lone member cannot, so the three start together."""
    return poll(lambda: etcd_healthy(cluster), seconds) is not None


def cluster_json(cluster):
    """Patroni's /cluster from the first node that answers (each one's view comes from etcd)."""
    for n in NODES:
        try:
            with urllib.request.urlopen(rest_url(cluster, n) + "/cluster", timeout=1) as response:
                return json.loads(response.read().decode())
        except (OSError, ValueError):
            continue
    return None


def is_primary(cluster, n):
    """Node n's Patroni answers 2xx on /primary: it holds the lock and its PostgreSQL runs."""
    status = http_status(cluster.port("NODE%d_REST_PORT" % n), "/primary", host=cluster.node_address(n), timeout=1)
    return 200 <= status < 300


def haproxy_pg_state(cluster, node):
    """HAProxy's view of node nX in its PostgreSQL section: UP for the leader, DOWN for the others."""
    return haproxy.state(cluster.port("HAPROXY_STATS_PORT"), node, section="postgres")


def psql_value(host, port, sql):
    """What PostgreSQL answers as the postgres user (rows on lines, fields split by |), or None if it
    does not answer."""
    try:
        return postgres.psql("postgresql://postgres@%s:%s/postgres?connect_timeout=2" % (host, port), sql,
                             timeout=20).strip()
    except (HarnessError, subprocess.TimeoutExpired):
        return None


def serving_leader(cluster):
    """The node HAProxy sends PostgreSQL connections to and that answers there as a primary."""
    for n in NODES:
        if haproxy_pg_state(cluster, "n%d" % n) == "UP":
            if psql_value("127.0.0.1", cluster.port("PG_PORT"), "SELECT pg_is_in_recovery()") == "f":
                return "n%d" % n
    return None


def wait_serving_leader(cluster, seconds, not_this=None):
    """Until a leader (other than `not_this`) serves through HAProxy; its name, or None."""
    def new_leader():
        leader = serving_leader(cluster)
        return leader if leader != not_this else None
    return poll(new_leader, seconds)


def replication_rows(cluster, leader):
    """From the leader: (name, state, sync_state, lag_bytes) per standby connected to it."""
    n = int(leader[1:])
    text = psql_value(cluster.node_address(n), cluster.port("NODE%d_PG_PORT" % n), """SELECT application_name,
        state, sync_state, COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), -1)::bigint
        FROM pg_stat_replication""")
    return [tuple(line.split("|")) for line in (text or "").splitlines() if line.count("|") == 3]


def standbys_streaming(cluster, rows):
    """Both standbys stream, one of them synchronously unless the cluster runs --async."""
    streaming = [row for row in rows if row[1] == "streaming"]
    return len(streaming) >= 2 and (cluster.conf.get("ASYNC") == "1" or any(row[2] == "sync" for row in streaming))


def wait_standbys(cluster, seconds):
    """Until both standbys stream from the leader; False (having said what it saw) after `seconds`."""
    seen = {"leader": None, "rows": []}

    def streaming():
        seen["leader"] = leader_name(cluster)
        if seen["leader"] is None:
            return False
        seen["rows"] = replication_rows(cluster, seen["leader"])
        return standbys_streaming(cluster, seen["rows"])
    if poll(streaming, seconds):
        return True
    say("the standbys are not both streaming after %d s (leader: %s): %s" % (
        seconds, seen["leader"] or "none", "\n".join(" ".join(row) for row in seen["rows"])))
    return False


def wait_primary(cluster, n, seconds):
    """Until node n's Patroni says it is the primary; False once its Patroni has exited or after
    `seconds`."""
    def state():
        if is_primary(cluster, n):
            return "primary"
        return "exited" if cluster.member_pid("patroni%d" % n) is None else None
    return poll(state, seconds) == "primary"


def node_lines(cluster):
    """`status`'s lines after the members': the leader, then per node its role, state and lag in
    Patroni's view, its replication as the leader sees it, its postmaster and HAProxy's view."""
    leader = leader_name(cluster)
    lines = ["leader: %s" % (leader or "none")]
    view = cluster_json(cluster)
    rows = {row[0]: row for row in replication_rows(cluster, leader)} if leader else {}
    for n in NODES:
        name = "n%d" % n
        role = state = lag = "unknown"
        if view is not None:
            role, state, lag = "absent", "unknown", "unknown"
            for member in view.get("members", []):
                if member.get("name") == name:
                    role, state, lag = member.get("role"), member.get("state") or "unknown", member.get("lag", 0)
                    break
        pid = node_postgres.postmaster_pid(cluster, n)
        words = ["%s role=%s state=%s lag=%s" % (name, role, state, lag)]
        if name in rows:
            _, streaming, sync_state, lag_bytes = rows[name]
            words.append("replication=%s sync_state=%s replay_lag_bytes=%s" % (streaming, sync_state, lag_bytes))
        elif name != leader:
            words.append("replication=none")
        words.append("postgres=%s" % (pid if pid is not None else "stopped"))
        words.append("haproxy=%s" % haproxy_pg_state(cluster, name).replace(" ", "_"))
        lines.append(" ".join(words))
    return lines


def post_json(url, body, timeout=60):
    """POST a JSON body; (answered, text) where text is the answer's body and "(HTTP code)", as
    curl -w prints it, or why nothing answered."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return True, "%s (HTTP %d)" % (response.read().decode(errors="replace"), response.status)
    except urllib.error.HTTPError as error:
        return True, "%s (HTTP %d)" % (error.read().decode(errors="replace"), error.code)
    except OSError as error:
        return False, str(error)
