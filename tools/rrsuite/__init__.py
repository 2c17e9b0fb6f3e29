"""rrsuite: how the suites outside C++ start, wait for, supervise and stop the servers and daemons
they run against (the C++ tests keep tests/support/process.cpp). Python 3 standard library only;
import it with tools/ on sys.path.

  process.py        one supervised child: spawn with a log file, wait for readiness, stop, reap;
                    running a command; a guardian that outlives a harness killed outright
  ports.py          free loopback ports
  daemons.py        rocket-rides-api (migrate, serve, user create), enqueuer, completer, reaper
  provider.py       the stand-in payment provider
  postgres.py       a fresh database of a suite's own in a running cluster; psql
  redis.py          a Redis server started again after a fault, stopped keeping its data
  local_servers.py  PostgreSQL and Redis (or Redis under Sentinel) through scripts/local-servers.sh
  cluster.py        scripts/cluster.sh's cluster (plain or HA) and its members
  patroni.py        the HA cluster's Patroni nodes and their addresses
  netns.py          network namespaces for the HA shape
  plain.py          the plain shape (API, fresh database, stand-in) and the stand-in alone
  __main__.py       `python3 -m rrsuite up --shape plain|provider --json` for suites in other
                    languages (tests/support/rrsuite.js for Node.js)
"""
