// Finding the current master through Redis Sentinel, as Redis's client guidelines for Sentinel
// describe (https://redis.io/docs/reference/sentinel-clients/): ask the sentinels in turn for
// SENTINEL get-master-addr-by-name, and keep the one that answered first in the list.
#pragma once

#include <string>
#include <vector>

#include "common/redis/connection.hpp"
#include "common/redis/redis_url.hpp"

namespace rr::redis {

// No sentinel named a master: every one was unreachable, timed out, answered with an error or
// did not know the name. The message lists each sentinel's problem.
class NoSentinelAnswered : public RedisError {
 public:
  using RedisError::RedisError;
};

struct MasterAddress {
  RedisEndpoint master;    // host and port only
  RedisEndpoint sentinel;  // the sentinel that named it
};

class SentinelDiscovery {
 public:
  // Short timeouts by default: a sentinel that does not answer in half a second is skipped for
  // the next one rather than holding up a failover.
  SentinelDiscovery(std::vector<RedisEndpoint> sentinels, std::string master_name,
                    ConnectOptions options = {std::chrono::milliseconds(500), std::chrono::milliseconds(1000)});

  // Asks each sentinel in the current order; the first that names the master moves to the head
  // of the list, so the next discovery asks it first. Throws NoSentinelAnswered.
  MasterAddress find_master();

  const std::vector<RedisEndpoint>& sentinels() const { return sentinels_; }
  const std::string& master_name() const { return master_name_; }

 private:
  std::vector<RedisEndpoint> sentinels_;
  std::string master_name_;
  ConnectOptions options_;
};

}  // namespace rr::redis
