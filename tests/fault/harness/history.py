"""A recorded history: everything the checker reads, as plain data (no connection, no process).

What the clients saw (the good clients' KeyRecords, the hostile client's HostileRecords and its
bursts), what the provider holds (/_mock/charges, /_mock/refunds, /_mock/stats), what the database
holds (key rows, rides, staged jobs, users), what Redis holds (queue:default), and what the run did
(the faults and their windows, the rolling restarts, the leader changes). The live run fills one in
(recording.py); the checker's own test writes small ones by hand (checker_test.py)."""

import collections


class History:
    """Fields, all plain values; each defaults to what an empty run of the plain profile has."""

    FIELDS = collections.OrderedDict([
        # The database: rows as the checker's queries return them (see recording.py for the
        # columns), users as {user id: stripe_customer_id}.
        ("keys", list),
        ("rides", list),
        ("staged", list),
        ("customers", dict),
        # The provider's records.
        ("charges", list),
        ("refunds", list),
        ("stats", dict),
        # Redis: the lines of queue:default, or None when the run had no enqueuer (invariant 3
        # is then skipped).
        ("queue", lambda: None),
        # The good clients: their KeyRecords, how many requests they sent, every request that ended
        # in a connection error, a timeout or a 5xx (sent, ended, status or None, key), every 429
        # for failed authentications (sent, key), every 2xx (sent, ended, replayed).
        ("records", list),
        ("requests", lambda: 0),
        ("client_errors", list),
        ("auth_throttled", list),
        ("ok_times", list),
        # Who they are: {email: user id}, [(email, customer, token, declines)] of the good users,
        # (email, customer, token) of the hostile one.
        ("user_ids", dict),
        ("users", list),
        ("hostile_user", lambda: ("", "", "")),
        # The hostile client: its HostileRecords, {valid key: params}, [(key, status, body)] of its
        # final answers, [(APIs it could reach, [records])] of its token floods, [(first request,
        # [waiters])] of its waiter floods, and a count of its probes by kind.
        ("hostile_records", list),
        ("flood_keys", dict),
        ("flood_answers", list),
        ("token_bursts", list),
        ("waiter_bursts", list),
        ("hostile_kinds", collections.Counter),
        # The run: faults by kind, (kind, start, end) of each, daemons that exited by themselves,
        # (start, end) of each rolling restart, and how much slower than plain the binaries are.
        ("faults", collections.Counter),
        ("fault_windows", list),
        ("unexpected_exits", list),
        ("rolling_windows", list),
        ("slow", lambda: 1.0),
        # The topology: the cluster's (HAProxy, PgBouncer), the HA one's (Patroni) and Redis under
        # Sentinel (with the master the checker read last).
        ("cluster", lambda: False),
        ("ha", lambda: False),
        ("sentinel", lambda: False),
        ("final_redis_master", lambda: None),
        # The HA profiles: leader changes observed, (kind, fault time, old leader, new leader or None,
        # new leader seen) of each leader fault, [start, end] of the traffic, the node read, and the
        # secret provider keys derive from (None when the build sends random ones).
        ("failovers", lambda: 0),
        ("failover_events", list),
        ("traffic_window", lambda: [0.0, 0.0]),
        ("final_leader", lambda: None),
        ("provider_key_secret", lambda: None),
    ])

    def __init__(self, **fields):
        unknown = set(fields) - set(self.FIELDS)
        if unknown:
            raise TypeError("no such history field: %s" % ", ".join(sorted(unknown)))
        for name, default in self.FIELDS.items():
            setattr(self, name, fields[name] if name in fields else default())

    @property
    def hostile_id(self):
        return self.user_ids[self.hostile_user[0]]
