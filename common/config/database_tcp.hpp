// DATABASE_TCP_USER_TIMEOUT, applied to a connection URL with TCP keepalives
// (common/db/tcp_keepalives.hpp): what DATABASE_URL and the enqueuer's LISTEN_DATABASE_URL carry
// once parsed, so every connection made from them has both.
#pragma once

#include <chrono>
#include <string>

#include "common/config/environment.hpp"

namespace rr::config {

// DATABASE_TCP_USER_TIMEOUT seconds, default 15 (0: the kernel's, about 15 minutes; at most 3600):
// how long data sent to the database may stay unacknowledged before the connection counts as broken.
std::chrono::milliseconds database_tcp_user_timeout(const Environment& env);

// `url` with the keepalives and that tcp_user_timeout, each unless the URL sets it already.
std::string with_database_tcp_settings(const Environment& env, const std::string& url);

}  // namespace rr::config
