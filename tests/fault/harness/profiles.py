"""The fault suite's profiles (how long, how many clients, which topology) and the kinds of
fault each topology injects."""


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
