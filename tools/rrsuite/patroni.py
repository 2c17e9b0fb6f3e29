"""The Patroni nodes of scripts/cluster.sh start --ha, found from their configuration files: each
node's REST API and PostgreSQL connect addresses."""

import os


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


def discover_nodes(cluster_dir):
    """{node: {"rest": (host, port), "pg": (host, port)}} from the Patroni files under the
    cluster's directory (up to three levels down, logs skipped)."""
    nodes = {}
    for root, dirs, files in os.walk(cluster_dir):
        if root.count(os.sep) - cluster_dir.count(os.sep) >= 3:
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
                nodes[node] = {"rest": rest, "pg": pg}
    return nodes
