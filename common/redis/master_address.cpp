// The master's address from a sentinel's answer: [ip, port] or nil when the name is not monitored.
#include "common/redis/master_address.hpp"

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

}  // namespace rr::redis
