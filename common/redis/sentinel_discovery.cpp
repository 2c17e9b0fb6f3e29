// One round of Sentinel discovery: sentinels in turn, the answering one first next time.
#include "common/redis/sentinel_discovery.hpp"

#include <algorithm>
#include <charconv>

namespace rr::redis {

RedisEndpoint parse_master_address(const Reply& reply, const std::string& master_name) {
  if (reply.is_nil()) throw RedisError("does not monitor a master named '" + master_name + "'");
  const auto& fields = reply.as_array();
  if (fields.size() != 2) throw RedisError("answered an address of " + std::to_string(fields.size()) + " fields");
  RedisEndpoint master;
  master.host = fields[0].as_string();
  const std::string& port_text = fields[1].as_string();
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (master.host.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() || port < 1 ||
      port > 65535) {
    throw RedisError("answered an invalid address");
  }
  master.port = static_cast<std::uint16_t>(port);
  return master;
}

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
