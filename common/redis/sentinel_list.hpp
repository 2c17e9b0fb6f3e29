// REDIS_SENTINELS and REDIS_SENTINEL_MASTER: which sentinels to ask, and for which master.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/redis/redis_url.hpp"

namespace rr::redis {

// `host:port,host:port` ([::1]:26379 for IPv6; spaces around commas allowed). Each entry becomes
// an endpoint with host and port only. Throws RedisUrlError describing the first bad entry.
std::vector<RedisEndpoint> parse_sentinel_list(std::string_view text);

// A master name as sentinel.conf's `sentinel monitor <name>` writes it: 1 to 200 printable ASCII
// characters without spaces. Throws RedisUrlError otherwise.
std::string validate_sentinel_master_name(std::string_view name);

}  // namespace rr::redis
