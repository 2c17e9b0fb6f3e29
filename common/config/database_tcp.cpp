// Reading DATABASE_TCP_USER_TIMEOUT once for every database URL a binary connects with.
#include "common/config/database_tcp.hpp"

#include "common/db/tcp_keepalives.hpp"

namespace rr::config {

std::chrono::milliseconds database_tcp_user_timeout(const Environment& env) {
  return env.seconds("DATABASE_TCP_USER_TIMEOUT", 15, 0, 3600);
}

std::string with_database_tcp_settings(const Environment& env, const std::string& url) {
  return db::with_tcp_keepalives(url, database_tcp_user_timeout(env));
}

}  // namespace rr::config
