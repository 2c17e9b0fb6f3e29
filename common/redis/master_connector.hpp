// Opens a connection to the Redis master: the one REDIS_URL names, or the one the sentinels name
// (REDIS_SENTINELS, REDIS_SENTINEL_MASTER), checked with ROLE. Every connect starts the discovery
// over, so a caller that drops a connection after any error (a timeout, READONLY, -LOADING)
// follows a failover with its next connect.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/redis/connection.hpp"
#include "common/redis/redis_url.hpp"
#include "common/redis/sentinel_discovery.hpp"

namespace rr::redis {

// Where the master is, as configured.
struct RedisTarget {
  // REDIS_URL: the master itself without sentinels; with them only its database number, user and
  // password are used (the sentinels give the host and port).
  RedisEndpoint endpoint;
  std::vector<RedisEndpoint> sentinels;  // REDIS_SENTINELS; empty: no Sentinel
  std::string sentinel_master;           // REDIS_SENTINEL_MASTER

  bool uses_sentinels() const { return !sentinels.empty(); }
  // For log lines: the endpoint, or "sentinel master NAME via N sentinels". Never a password.
  std::string describe() const;
};

class MasterConnector {
 public:
  explicit MasterConnector(RedisTarget target, ConnectOptions options = {});

  // With sentinels: asks them for the master, connects, authenticates, selects the database, and
  // checks ROLE. A server that is not (or no longer) the master throws RedisError; the caller's
  // next connect asks the sentinels again. Throws NoSentinelAnswered when none names a master.
  Connection connect();

  // The master the last successful connect reached (empty before one).
  const std::optional<RedisEndpoint>& current_master() const { return current_master_; }

 private:
  RedisTarget target_;
  ConnectOptions options_;
  std::optional<SentinelDiscovery> discovery_;
  std::optional<RedisEndpoint> current_master_;
};

}  // namespace rr::redis
