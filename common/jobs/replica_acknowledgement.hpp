// REDIS_MIN_REPLICAS: a batch counts as delivered only once that many replicas hold it (WAIT), so
// a failover to an acknowledged replica cannot lose it. Short of that the batch's transaction
// rolls back and its rows go again, with the same jids.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "common/redis/connection.hpp"
#include "common/redis/server_role.hpp"

namespace rr::jobs {

// Fewer replicas than REDIS_MIN_REPLICAS acknowledged a batch, or are connected to take one. Not
// a broken connection: the master answered, it just cannot promise the batch survives it.
class ReplicasShort : public redis::RedisError {
 public:
  using redis::RedisError::RedisError;
};

struct ReplicaAcknowledgement {
  int required = 0;  // REDIS_MIN_REPLICAS; 0 sends no WAIT
  // WAIT's own timeout; below the connection's command timeout, or hiredis gives up first.
  std::chrono::milliseconds timeout{2000};

  bool enabled() const { return required > 0; }
  // WAIT <required> <timeout in ms>, sent in the same round trip as the push.
  std::vector<std::string> wait_command() const;
  // Throws ReplicasShort unless WAIT's answer reaches `required`.
  void check_acknowledged(long long acknowledged, std::size_t batch_size) const;
  // Throws ReplicasShort unless the master lists at least `required` replicas: asked before a
  // push once a batch fell short, so a master without replicas is not sent the batch again and
  // again (each time a duplicate in the queue) until one is back.
  void check_connected(const redis::ServerRole& role) const;
};

}  // namespace rr::jobs
