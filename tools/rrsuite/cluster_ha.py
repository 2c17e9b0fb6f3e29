"""The HA shape of scripts/cluster.sh (start DIR --ha [--async] [--netns PREFIX]): PostgreSQL as
three Patroni nodes n1..n3 over three etcd members, every node archiving into one pgBackRest
repository, HAProxy also listening on a PostgreSQL port that follows the leader, PgBouncer and the
daemons as in the plain shape (docs/high-availability.md). Its start writes each node's files from
deploy/'s templates, starts the nodes in the order a new cluster needs (etcd healthy, n1 the first
leader and the backup stanza, then the standbys from it), then what is in front of PostgreSQL; its
stop takes everything down in the order that loses nothing."""

import os
import re
import shutil
import subprocess

from . import backup, cluster_backup, cluster_steps, ha_state, members, node_netns, node_postgres, ports, redis
from .clusterdir import NODES, ClusterError, bash_quote, say
from .paths import LOCAL_SERVERS, REPO

PG_BIN_DIR = "/usr/lib/postgresql/15/bin"
NODE_PORTS = ("ETCD_CLIENT_PORT", "ETCD_PEER_PORT", "PG_PORT", "REST_PORT")
CONF_VARIABLES = (["BIN_DIR", "PG_BIN_DIR", "CLUSTER_TOKEN", "PG_PORT", "REDIS_PORT", "PGBOUNCER_PORT", "HAPROXY_PORT",
                   "HAPROXY_STATS_PORT", "MOCK_PORT", "API1_PORT", "API2_PORT"]
                  + ["NODE%d_%s" % (n, name) for n in NODES for name in NODE_PORTS])
APP_PORTS = ("PGBOUNCER_PORT", "HAPROXY_PORT", "HAPROXY_STATS_PORT", "MOCK_PORT", "API1_PORT", "API2_PORT")


def node_file(cluster, n, *parts):
    return cluster.file("patroni", "n%d" % n, *parts)


def node_port(cluster, n, name):
    return cluster.conf["NODE%d_%s" % (n, name)]


def fill_template(source, target, values):
    """Each @NAME@ in `source` replaced by its value, written to `target`; none may be left."""
    with open(source) as f:
        text = f.read()
    for name, value in values.items():
        text = text.replace("@%s@" % name, str(value))
    with open(target, "w") as f:
        f.write(text)
    left = sorted(set(re.findall(r"@[A-Z_]*@", text)))
    if left:
        raise ClusterError("%s: placeholders left unfilled: %s " % (target, " ".join(left)))


def write_etcd_config(cluster, n):
    initial = ",".join("etcd%d=http://%s:%s" % (m, cluster.node_address(m), node_port(cluster, m, "ETCD_PEER_PORT"))
                       for m in NODES)
    os.makedirs(cluster.file("etcd"), exist_ok=True)
    fill_template(os.path.join(REPO, "deploy", "etcd.conf.yml.in"), cluster.file("etcd", "etcd%d.yml" % n), {
        "NAME": "etcd%d" % n, "DATA_DIR": cluster.file("etcd", "etcd%d.data" % n), "ADDRESS": cluster.node_address(n),
        "CLIENT_PORT": node_port(cluster, n, "ETCD_CLIENT_PORT"), "PEER_PORT": node_port(cluster, n, "ETCD_PEER_PORT"),
        "INITIAL_CLUSTER": initial, "CLUSTER_TOKEN": cluster.conf["CLUSTER_TOKEN"]})


def write_patroni_config(cluster, n):
    hosts = ",".join("%s:%s" % (cluster.node_address(m), node_port(cluster, m, "ETCD_CLIENT_PORT")) for m in NODES)
    network = "10.213.%s.0/24" % cluster.conf["NETNS_NET"] if cluster.conf.get("NETNS_PREFIX") else "127.0.0.1/32"
    sync = "false" if cluster.conf.get("ASYNC") == "1" else "true"
    node_dir, config = node_file(cluster, n), cluster_backup.node_config(cluster, n)
    os.makedirs(node_dir, exist_ok=True)
    fill_template(os.path.join(REPO, "deploy", "patroni.yml.in"), cluster.file("patroni", "n%d.yml" % n), {
        "SCOPE": "rocket-rides", "NAME": "n%d" % n, "ADDRESS": cluster.node_address(n),
        "PG_PORT": node_port(cluster, n, "PG_PORT"), "REST_PORT": node_port(cluster, n, "REST_PORT"),
        "DATA_DIR": os.path.join(node_dir, "data"), "SOCKET_DIR": node_dir, "BIN_DIR": PG_BIN_DIR, "ETCD_HOSTS": hosts,
        "CLIENT_NETWORK": network, "AUTH_METHOD": "trust", "SUPERUSER_PASSWORD": "unused-under-trust",
        "REPLICATION_PASSWORD": "unused-under-trust", "SYNCHRONOUS_MODE": sync,
        "ARCHIVE_COMMAND": backup.archive_command(config),
        "RESTORE_COMMAND": backup.patroni_restore_command(config, PG_BIN_DIR),
        "REPLICA_COMMAND": "pgbackrest --config=%s --stanza=%s --type=standby --target-timeline=latest restore" % (
            config, backup.STANZA)})
    # Every node archives into the one repository; spool, log and locks are the node's own.
    backup.write_config(config, cluster_backup.repo_path(cluster), os.path.join(node_dir, "data"),
                        node_port(cluster, n, "PG_PORT"), node_dir, os.path.join(node_dir, "pgbackrest"), "cluster.sh")
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", "postgres:postgres", node_dir, cluster.file("patroni", "n%d.yml" % n)],
                       check=True)
    os.chmod(node_dir, 0o700)


def check_requirements():
    for tool in ("patroni", "etcd", "etcdctl", "redis-server"):
        if not shutil.which(tool):
            raise ClusterError("%s missing (scripts/install-deps.sh installs it)" % tool)
    if not os.access(os.path.join(PG_BIN_DIR, "postgres"), os.X_OK):
        raise ClusterError("PostgreSQL 15 missing (%s)" % PG_BIN_DIR)


def record_conf(cluster, bin_dir, asynchronous):
    """Picks every port and writes DIR/cluster.conf, which every later command reads."""
    conf = {"BIN_DIR": bin_dir, "PG_BIN_DIR": PG_BIN_DIR, "CLUSTER_TOKEN": "rocket-rides-" + os.urandom(6).hex()}
    for name in ("REDIS_PORT", "PG_PORT"):  # PG_PORT: HAProxy's, the leader whichever it is
        conf[name] = str(ports.free_port())
    for n in NODES:
        for name in NODE_PORTS:
            conf["NODE%d_%s" % (n, name)] = str(ports.free_port())
    for name in APP_PORTS:
        conf[name] = str(ports.free_port())
    cluster.conf = dict(conf, HA="1", ASYNC="1" if asynchronous else "")
    with open(cluster.file("cluster.conf"), "w") as f:
        f.write("HA=1\nASYNC=%s\n" % cluster.conf["ASYNC"])
        f.write("".join("%s=%s\n" % (name, bash_quote(conf[name])) for name in CONF_VARIABLES))


def start(cluster, bin_dir, asynchronous, netns_prefix):
    if os.path.isdir(cluster.file("etcd")) or os.path.isdir(cluster.file("patroni")):
        # New ports each start, and etcd members keep their peers' old addresses in their data.
        raise ClusterError("%s holds the data of a stopped HA cluster, which start does not reuse: use a new DIR (or "
                           "remove %s/etcd and %s/patroni)" % (cluster.path, cluster.path, cluster.path))
    record_conf(cluster, bin_dir, asynchronous)
    if netns_prefix:
        node_netns.up(cluster, netns_prefix)

    say("starting Redis on %s in %s" % (cluster.conf["REDIS_PORT"], cluster.file("servers")))
    os.makedirs(cluster.file("servers"), exist_ok=True)
    with open(cluster.file("servers", "ports"), "w") as f:
        f.write("PG_PORT=%s\nREDIS_PORT=%s\n" % (cluster.conf["PG_PORT"], cluster.conf["REDIS_PORT"]))
    redis.start(cluster.port("REDIS_PORT"), cluster.file("servers"), cluster.file("servers", "redis.pid"),
                cluster.file("servers", "redis.log"))

    say("starting etcd1..3 (clients on %s)" % ha_state.etcd_endpoints(cluster))
    for n in NODES:
        write_etcd_config(cluster, n)
    for n in NODES:
        members.start_member(cluster, "etcd%d" % n)
    if not ha_state.wait_etcd_healthy(cluster, 30):
        cluster.log_tail("etcd1")
        raise ClusterError("etcd is not healthy after 30 s")

    say("starting patroni1 (it initialises n1, the first leader)")
    for n in NODES:
        write_patroni_config(cluster, n)
    members.start_member(cluster, "patroni1")
    if not ha_state.wait_primary(cluster, 1, 60):
        cluster.log_tail("patroni1")
        raise ClusterError("n1 did not become the leader within 60 s")
    say("creating the backup stanza (n1 archives from now on)")
    backup.PgBackRest(cluster_backup.node_config(cluster, 1), say).stanza_create()
    say("starting patroni2 and patroni3 (standbys: a base backup of n1 each)")
    members.start_member(cluster, "patroni2")
    members.start_member(cluster, "patroni3")
    if not ha_state.wait_standbys(cluster, 90):
        cluster.log_tail("patroni2")
        cluster.log_tail("patroni3")
        raise ClusterError("the standbys did not come up")

    cluster_steps.capture_settings(cluster, os.environ)
    cluster_steps.write_pgbouncer_site(cluster)
    say("starting HAProxy on %s (PostgreSQL leader on %s, stats on %s)" % (
        cluster.conf["HAPROXY_PORT"], cluster.conf["PG_PORT"], cluster.conf["HAPROXY_STATS_PORT"]))
    members.start_member(cluster, "haproxy")
    if ha_state.wait_serving_leader(cluster, 20) is None:
        raise ClusterError("HAProxy does not reach the leader on %s" % cluster.conf["PG_PORT"])
    if subprocess.run(["psql", "-X", "-q", "-h", "127.0.0.1", "-p", cluster.conf["PG_PORT"], "-U", "postgres", "-d",
                       "postgres", "-c", "CREATE DATABASE rocket_rides"], stdin=subprocess.DEVNULL,
                      stdout=subprocess.DEVNULL).returncode != 0:
        raise ClusterError("CREATE DATABASE rocket_rides through HAProxy failed")

    say("starting PgBouncer on %s (through HAProxy's %s)" % (cluster.conf["PGBOUNCER_PORT"], cluster.conf["PG_PORT"]))
    members.start_member(cluster, "pgbouncer")
    cluster_steps.check_pgbouncer_policy(cluster)
    cluster_steps.migrate(cluster)
    cluster_steps.create_demo_user(cluster)
    cluster_steps.start_provider_and_apis(cluster)
    cluster_steps.check_apis_through_haproxy(cluster)
    say("starting enqueuer1, enqueuer2, completer1, completer2, reaper1, reaper2")
    for name in ("enqueuer1", "enqueuer2", "completer1", "completer2", "reaper1", "reaper2"):
        members.start_member(cluster, name)
    say("up: API at http://127.0.0.1:%s, leader %s (logs in %s)" % (
        cluster.conf["HAPROXY_PORT"], ha_state.leader_name(cluster) or "none", cluster.file("logs")))
    print("\n".join(cluster_steps.export_lines(cluster)), flush=True)


def stop(cluster):
    say("stopping the members")
    # The daemons first (HAProxy takes each API out as it drains), then PgBouncer, then HAProxy:
    # HAProxy's soft stop waits for the PostgreSQL sessions it carries (PgBouncer's) to end, up to
    # hard-stop-after (30 s), so it goes once they are gone.
    members.stop_members(cluster, cluster.app_members + ["stripe-mock"])
    members.stop_members(cluster, ["pgbouncer"])
    members.stop_members(cluster, ["haproxy"])
    # Each patroni stops its PostgreSQL (a leader first gives up its lock), then etcd one member at
    # a time: a member stopping hands raft leadership to a live peer, which it cannot do (and waits
    # for seconds) when they all stop at once.
    members.stop_members(cluster, ["patroni1", "patroni2", "patroni3"])
    node_postgres.stop_orphans(cluster)
    for n in NODES:
        members.stop_members(cluster, ["etcd%d" % n])
    if os.path.isfile(cluster.file("servers", "redis.pid")):
        say("stopping Redis")
        subprocess.run([LOCAL_SERVERS, "stop", cluster.file("servers")], stdin=subprocess.DEVNULL, stdout=2)
    node_netns.down(cluster)
