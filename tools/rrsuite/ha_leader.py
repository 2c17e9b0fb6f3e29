"""A planned or forced change of the HA shape's leader (scripts/cluster.sh switchover|failover DIR
[--candidate nX]), through Patroni's REST API: the candidate (by default the synchronous standby,
the only one Patroni promotes in synchronous mode, else a running replica) is checked before
anything is asked, and the command returns once the new leader serves through HAProxy."""

from . import ha_state
from .clusterdir import NODES, ClusterError, say


def default_candidate(view):
    for role in ("sync_standby", "replica"):
        for member in view.get("members", []):
            if member.get("role") == role and member.get("state") in ("running", "streaming"):
                return member["name"]
    return None


def change(cluster, what, args):
    """what: "failover" or "switchover". Prints "old leader: nX" and "new leader: nY"."""
    candidate = None
    while args:
        if args[0] == "--candidate":
            if len(args) < 2 or not args[1]:
                raise ClusterError("--candidate needs a node")
            candidate, args = args[1], args[2:]
        else:
            raise ClusterError("%s: unknown option %s" % (what, args[0]))
    old = ha_state.leader_name(cluster)
    if old is None:
        raise ClusterError("%s: there is no leader" % what)
    view = ha_state.cluster_json(cluster)
    if view is None:
        raise ClusterError("%s: no Patroni REST API answers" % what)
    if candidate is None:
        candidate = default_candidate(view)
        if candidate is None:
            raise ClusterError("%s: no standby to promote" % what)
    if candidate == old:
        raise ClusterError("%s: %s is the leader already" % (what, candidate))
    if cluster.conf.get("ASYNC") != "1":
        # Patroni refuses any other (a 503 with "candidate does not match with sync_standbys").
        sync = [m["name"] for m in view.get("members", []) if m.get("role") == "sync_standby"]
        if candidate not in sync:
            raise ClusterError("%s: in synchronous mode only the synchronous standby (%s) may be promoted, not %s" % (
                what, " ".join(sync) or "none now", candidate))
    body = {"leader": old, "candidate": candidate} if what == "switchover" else {"candidate": candidate}
    say("%s from %s to %s" % (what, old, candidate))
    answer = ""
    for n in NODES:
        sent, answer = ha_state.post_json(ha_state.rest_url(cluster, n) + "/" + what, body)
        if sent:
            break
    else:
        raise ClusterError("%s: no Patroni REST API took the request: %s" % (what, answer))
    if not answer.endswith("(HTTP 200)"):
        raise ClusterError("%s refused: %s" % (what, answer))
    say("patroni: " + answer)
    new = ha_state.wait_serving_leader(cluster, 60, old)
    if new is None:
        raise ClusterError("%s: no new leader serves through HAProxy after 60 s" % what)
    print("old leader: %s" % old)
    print("new leader: %s" % new, flush=True)
