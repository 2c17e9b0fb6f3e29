// What a Redis server says it is (ROLE): the check Sentinel's client guidelines ask for after
// connecting to the address the sentinels gave, and the count of replicas a master has.
#pragma once

#include <cstddef>
#include <string>

#include "common/redis/connection.hpp"

namespace rr::redis {

struct ServerRole {
  enum class Kind { master, replica, sentinel };
  Kind kind = Kind::master;
  // A master's replicas as ROLE lists them: connected and past the initial sync (online).
  std::size_t replicas = 0;
  std::string name() const;  // "master", "replica" or "sentinel", for log lines
};

// Parses a ROLE reply; a reply of another shape throws RedisError.
ServerRole parse_role(const Reply& reply);
// Sends ROLE (which Redis answers even while it loads its data set).
ServerRole query_role(Connection& connection);

}  // namespace rr::redis
