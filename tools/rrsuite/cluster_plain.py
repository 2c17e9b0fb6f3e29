"""The plain shape of scripts/cluster.sh (start DIR without --ha): the local servers
(scripts/local-servers.sh: durable PostgreSQL archiving through pgBackRest, and Redis), PgBouncer in
front of PostgreSQL, the stand-in provider, two APIs behind HAProxy, two enqueuers, two completers
and a reaper; and its stop."""

import os
import subprocess
import sys

from . import cluster_steps, members, ports
from .clusterdir import ClusterError, bash_quote, read_assignments, say
from .paths import LOCAL_SERVERS

CONF_VARIABLES = ["BIN_DIR", "PG_PORT", "REDIS_PORT", "PGBOUNCER_PORT", "HAPROXY_PORT", "HAPROXY_STATS_PORT",
                  "MOCK_PORT", "API1_PORT", "API2_PORT"]


def start(cluster, bin_dir):
    say("starting PostgreSQL (durable) and Redis in %s" % cluster.file("servers"))
    if subprocess.run([LOCAL_SERVERS, "start", cluster.file("servers"), "--archive"], stdin=subprocess.DEVNULL,
                      stdout=subprocess.DEVNULL).returncode != 0:
        raise ClusterError()
    cluster.conf = {"BIN_DIR": bin_dir}
    servers = read_assignments(cluster.file("servers", "ports"))
    for name in ("PG_PORT", "REDIS_PORT"):
        cluster.conf[name] = servers[name]
        ports._taken.add(int(servers[name]))
    for name in CONF_VARIABLES[3:]:
        cluster.conf[name] = str(ports.free_port())
    with open(cluster.file("cluster.conf"), "w") as f:
        f.write("".join("%s=%s\n" % (name, bash_quote(cluster.conf[name])) for name in CONF_VARIABLES))
    cluster_steps.capture_settings(cluster, os.environ)
    cluster_steps.write_pgbouncer_site(cluster)

    say("starting PgBouncer on %s (PostgreSQL on %s)" % (cluster.conf["PGBOUNCER_PORT"], cluster.conf["PG_PORT"]))
    members.start_member(cluster, "pgbouncer")
    cluster_steps.check_pgbouncer_policy(cluster)

    cluster_steps.migrate(cluster)
    held = cluster_steps.psql_value(cluster.port("PG_PORT"),
                                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
    if held != "0":
        say("WARNING: %s advisory lock(s) still held on PostgreSQL after migrate" % held)
    cluster_steps.create_demo_user(cluster)
    cluster_steps.start_provider_and_apis(cluster)
    say("starting HAProxy on %s (stats on %s)" % (cluster.conf["HAPROXY_PORT"], cluster.conf["HAPROXY_STATS_PORT"]))
    members.start_member(cluster, "haproxy")
    cluster_steps.check_apis_through_haproxy(cluster)
    say("starting enqueuer1, enqueuer2, completer1, completer2, reaper")
    for name in ("enqueuer1", "enqueuer2", "completer1", "completer2", "reaper"):
        members.start_member(cluster, name)
    say("up: API at http://127.0.0.1:%s (logs in %s)" % (cluster.conf["HAPROXY_PORT"], cluster.file("logs")))
    print("\n".join(cluster_steps.export_lines(cluster)), flush=True)


def stop(cluster):
    """The plain shape's members (everything in front of PgBouncer at once: the APIs drain in
    parallel), then PgBouncer, then the local servers. Safe to call twice."""
    if cluster.exists():
        cluster.load()
        if cluster.ha:
            raise ClusterError("stop of the HA shape: scripts/cluster.sh")
        say("stopping the members")
        members.stop_members(cluster, ["haproxy"] + cluster.app_members + ["stripe-mock"])
        members.stop_members(cluster, ["pgbouncer"])
    if os.path.isdir(cluster.file("servers")):
        say("stopping PostgreSQL and Redis")
        subprocess.run([LOCAL_SERVERS, "stop", cluster.file("servers")], stdin=subprocess.DEVNULL,
                       stdout=sys.stderr.fileno())

