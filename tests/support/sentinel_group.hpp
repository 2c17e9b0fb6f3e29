// The production shape of Redis on loopback: a master, a replica and three sentinels (quorum 2),
// all real processes, with failover timings of a second or two (more replicas on request). Stopped on destruction.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/redis_server.hpp"
#include "support/sentinel_server.hpp"

namespace rr::test {

class SentinelGroup {
 public:
  // REDIS_MIN_REPLICAS=n needs n+1 replicas to keep accepting pushes after a failover.
  explicit SentinelGroup(std::size_t replicas = 1, std::string master_name = "rr-master");

  const std::string& master_name() const { return master_name_; }
  RedisServer& first_master() { return *master_; }
  RedisServer& first_replica() { return *replicas_.front(); }
  RedisServer& replica(std::size_t index) { return *replicas_.at(index); }
  // The master or replica listening on `port`.
  RedisServer& server_on(std::uint16_t port);
  // The master port the first running sentinel names (0 if none can say).
  std::uint16_t named_master_port();
  SentinelServer& sentinel(std::size_t index) { return *sentinels_.at(index); }
  std::size_t sentinel_count() const { return sentinels_.size(); }
  // REDIS_SENTINELS for this group.
  std::string sentinel_list() const;

  // Waits until every running sentinel sees the master up, the other running sentinels and at
  // least `replicas` replicas, and the replicas' links are up; false on timeout.
  bool wait_until_watched(std::size_t replicas, std::chrono::milliseconds timeout);
  // Waits until every running sentinel names `port` as the master and that server answers ROLE
  // master; false on timeout.
  bool wait_for_master(std::uint16_t port, std::chrono::milliseconds timeout);

 private:
  std::string master_name_;
  std::unique_ptr<RedisServer> master_;
  std::vector<std::unique_ptr<RedisServer>> replicas_;
  std::vector<std::unique_ptr<SentinelServer>> sentinels_;
};

// redis-cli's plain output of a reply of field/value pairs (SENTINEL master, INFO lines split on
// ':'), as a map.
std::map<std::string, std::string> field_pairs(const std::string& cli_output);

}  // namespace rr::test
