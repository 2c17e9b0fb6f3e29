// One round of Sentinel discovery: sentinels in turn, the answering one first next time.
#include "common/redis/sentinel_discovery.hpp"

#include <algorithm>

#include "common/redis/master_address.hpp"

namespace rr::redis {

SentinelDiscovery::SentinelDiscovery(std::vector<RedisEndpoint> sentinels, std::string master_name,
                                     ConnectOptions options)
    : sentinels_(std::move(sentinels)), master_name_(std::move(master_name)), options_(options) {
  if (sentinels_.empty()) throw std::invalid_argument("SentinelDiscovery needs at least one sentinel");
}

MasterAddress SentinelDiscovery::find_master() {
  std::string problems;
  for (auto it = sentinels_.begin(); it != sentinels_.end(); ++it) {
    try {
      Connection sentinel(*it, options_);
      RedisEndpoint master =
          parse_master_address(sentinel.command({"SENTINEL", "get-master-addr-by-name", master_name_}), master_name_);
      // The guidelines' "move it to the head": the sentinel that answered is likely up next time.
      std::rotate(sentinels_.begin(), it, it + 1);
      return {std::move(master), sentinels_.front()};
    } catch (const RedisError& e) {
      if (!problems.empty()) problems += "; ";
      problems += it->describe() + ": " + e.what();
    }
  }
  throw NoSentinelAnswered("no sentinel named a master '" + master_name_ + "' (" + problems + ")");
}

}  // namespace rr::redis
