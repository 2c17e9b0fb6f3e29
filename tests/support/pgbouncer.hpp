// A real PgBouncer in transaction pooling mode in front of the throwaway PostgreSQL, so tests can
// prove a binary keeps no state in a server session: with a small pool, consecutive
// transactions of one client land on different server sessions. Stopped on destruction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "support/process.hpp"

namespace rr::test {

class PgBouncer {
 public:
  // `direct_url` names the PostgreSQL server (any database); every database name is forwarded
  // to it. `pool_size` server connections per database and user.
  explicit PgBouncer(const std::string& direct_url, int pool_size = 3);
  ~PgBouncer();
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;

  // Stops (dropping every client and server connection) and starts again on the same port.
  void restart();
  std::uint16_t port() const { return port_; }
  // `url` (a libpq URI) with its host and port replaced by PgBouncer's.
  std::string route(const std::string& url) const;
  // Runs one command on PgBouncer's admin console (SHOW POOLS, SHOW SERVERS, ...) and returns its
  // result as lines of '|'-separated fields.
  std::string admin(const std::string& command) const;

 private:
  void start();
  void stop();

  std::string directory_;
  std::string config_path_;
  std::uint16_t port_;
  std::optional<ChildProcess> process_;
};

// One PgBouncer per test process, started on first use, when ROCKET_RIDES_TEST_PGBOUNCER=1 (CTest
// runs the database suites a second time so): TestDatabase then hands out URLs through it and
// sets DATABASE_PREPARED_STATEMENTS=off for the binaries the tests start. nullptr otherwise.
PgBouncer* shared_pgbouncer();

}  // namespace rr::test
