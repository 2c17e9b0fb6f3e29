// What a sentinel answers to SENTINEL get-master-addr-by-name, read without a connection.
#pragma once

#include <string>

#include "common/redis/connection.hpp"
#include "common/redis/redis_url.hpp"

namespace rr::redis {

// SENTINEL get-master-addr-by-name's answer, [ip, port], as the master's endpoint. Throws
// RedisError for nil (the name is not monitored) and for any other shape.
RedisEndpoint parse_master_address(const Reply& reply, const std::string& master_name);

}  // namespace rr::redis
