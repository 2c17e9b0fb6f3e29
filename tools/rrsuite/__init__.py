"""rrsuite: how the suites outside C++ start, wait for, supervise and stop the servers and daemons
they run against (the C++ tests keep tests/support/process.cpp). Python 3 standard library only;
import it with tools/ on sys.path.

  process.py        one supervised child: spawn with a log file, wait for readiness, stop, reap;
                    running a command; a guardian that outlives a harness killed outright
  ports.py          free loopback ports
  daemons.py        rocket-rides-api (migrate, serve, user create), enqueuer, completer, reaper
  provider.py       the stand-in payment provider
  postgres.py       a fresh database of a suite's own in a running cluster; psql; initdb and
                    pg_ctl start of a server of its own (scripts/local-servers.sh's)
  redis.py          a Redis server (scripts/local-servers.sh's, the HA shape's), started again
                    after a fault, stopped keeping its data
  pgbouncer.py      PgBouncer running deploy/pgbouncer.ini: site file, readiness, policy check
  haproxy.py        HAProxy running deploy/haproxy.cfg: command line, addresses, its view of a server
  local_servers.py  PostgreSQL and Redis (or Redis under Sentinel) through scripts/local-servers.sh,
                    for the suites
  cluster.py        scripts/cluster.sh's cluster (plain or HA) and its members, for the suites
  clusterdir.py     a cluster directory's files: cluster.conf, app.env, pid files, logs
  members.py        how each member both shapes share starts, and how every member stops
  cluster_cli.py    `python3 -m rrsuite cluster ...`: scripts/cluster.sh's commands
  cluster_backup.py cluster.sh's backup, backups, verify, backup-metrics and status's backup lines
  cluster_restore.py  cluster.sh's restore, plain and HA
  backup.py         pgBackRest for one PostgreSQL: configuration, archive and restore commands,
                    backups, list, status, verify, metrics, restore target (scripts/backup_info.py)
  backup_cli.py     `python3 -m rrsuite backup ...`: backup.py for a script in bash
  restore_steps.py  a restore's steps around pgBackRest: data restored, recovery, writes closed,
                    reconciliation
  local_servers_cli.py  `python3 -m rrsuite local-servers ...`: scripts/local-servers.sh's
                    commands: start (PostgreSQL, Redis, Sentinel), stop, env, postgres-start|stop
  local_servers_dir.py  its directory: DIR/ports, DIR/pg, PostgreSQL's options, start and stop
  local_servers_backup.py  its backup, backups and restore
  cluster_plain.py  cluster.sh's plain shape: its start and stop
  cluster_ha.py     cluster.sh's HA shape (--ha): the nodes' files, its start and stop
  cluster_steps.py  the steps of a start both shapes take: settings, PgBouncer, migrate, APIs
  ha_state.py       the HA shape now: leader, serving leader, standbys, node lines, waits
  ha_leader.py      switchover and failover through Patroni's REST API
  servers_cli.py    `python3 -m rrsuite server KIND ...`: one server for a script in bash
                    (the crashed-leader test)
  patroni.py        the HA cluster's Patroni nodes and their addresses
  netns.py          network namespaces for the HA shape
  node_netns.py     the HA shape's node namespaces (--netns) and partitions
  node_postgres.py  the HA shape's PostgreSQL servers as processes: pids, kill -9, orphans
  plain.py          the plain shape (API, fresh database, stand-in) and the stand-in alone
  __main__.py       `python3 -m rrsuite up --shape plain|provider --json` for suites in other
                    languages (tests/support/rrsuite.js for Node.js)
"""
