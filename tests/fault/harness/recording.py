"""Records a live run's history for the checker: what the database, Redis and the provider hold
now (SQL, redis-cli, the provider's /_mock/ records; never the API's word), with what the clients
saw and what the run did, as one History of plain data."""

import json

from .base import HarnessError
from .history import History
from .net import http_call


def provider_records(port, path):
    """The provider stand-in's records at path (/_mock/charges, /_mock/refunds)."""
    status, _, data = http_call(port, "GET", path, timeout=30)
    if status != 200:
        raise HarnessError("GET %s answered %d" % (path, status))
    return json.loads(data)


def record_history(suite):
    """The History of Suite suite as it stands (after quiescing, or after plants)."""
    servers = suite.servers
    # The body as a replay from the database answers it: a ride's 201 is stored as NULL when it
    # is rides_created_body_v1 of the key's ride, which every reader renders back through the
    # renderer the key names (sql/019).
    keys = servers.psql_json(
        "SELECT id, user_id, idempotency_key, recovery_point, locked_at IS NOT NULL AS locked, response_code, "
        "COALESCE(response_body, CASE WHEN response_code IS NOT NULL "
        "THEN idem_stored_answer(k.id, k.response_renderer) END) AS response_body, "
        "payment_idempotency_key, request_path, host(origin_ip) AS origin_ip FROM idempotency_keys k")
    rides = servers.psql_json(
        "SELECT id, idempotency_key_id, stripe_charge_id, user_id, cancelled_at IS NOT NULL AS cancelled, "
        "stripe_refund_id, refund_idempotency_key FROM rides")
    staged = servers.psql_json("SELECT staged_jobs_jid(id, jid) AS jid FROM staged_jobs")
    charges = provider_records(suite.mock_port, "/_mock/charges")
    refunds = provider_records(suite.mock_port, "/_mock/refunds")
    _, _, data = http_call(suite.mock_port, "GET", "/_mock/stats", timeout=30)
    stats = json.loads(data)
    customers = {u["id"]: u["stripe_customer_id"]
                 for u in servers.psql_json("SELECT id, stripe_customer_id FROM users")}
    queue = None
    if suite.enqueuers:
        out = servers.redis_cli("--raw", "LRANGE", "queue:default", "0", "-1", timeout=120).stdout.decode()
        queue = out.splitlines()
    traffic, hostile = suite.traffic, suite.hostile
    with traffic.lock:
        client_errors = list(traffic.client_errors)
        auth_throttled = list(traffic.auth_throttled)
        ok_times = list(traffic.ok_times)
    with hostile.lock:
        hostile_records = list(hostile.records)
        flood_keys = dict(hostile.flood_keys)
        flood_answers = list(hostile.flood_answers)
        token_bursts = list(hostile.token_bursts)
        waiter_bursts = list(hostile.waiter_bursts)
        hostile_kinds = hostile.kinds.copy()
    return History(
        keys=keys, rides=rides, staged=staged, customers=customers, charges=charges, refunds=refunds, stats=stats,
        queue=queue, records=list(traffic.records), requests=traffic.requests, client_errors=client_errors,
        auth_throttled=auth_throttled, ok_times=ok_times, user_ids=suite.user_ids, users=suite.users,
        hostile_user=suite.hostile_user, hostile_records=hostile_records, flood_keys=flood_keys,
        flood_answers=flood_answers, token_bursts=token_bursts, waiter_bursts=waiter_bursts,
        hostile_kinds=hostile_kinds, faults=suite.faults.copy(), fault_windows=list(suite.fault_windows),
        unexpected_exits=list(suite.unexpected_exits), rolling_windows=list(suite.rolling_windows), slow=suite.slow,
        cluster=suite.cluster, ha=suite.ha, sentinel=servers.sentinel, final_redis_master=servers.redis_port,
        failovers=len(suite.monitor.changes()) if suite.monitor else 0, failover_events=list(suite.failover_events),
        traffic_window=list(suite.traffic_window), final_leader=getattr(servers, "pinned", None),
        provider_key_secret=suite.provider_key_secret)
