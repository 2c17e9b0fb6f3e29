// Where Redis is, parsed from REDIS_URL: redis://[[user]:password@]host[:port][/db],
// unix:///path/to/socket[?db=N] or a bare /path/to/socket.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rr::redis {

// A malformed URL. The message describes the problem and never repeats the URL, which may hold a
// password.
class RedisUrlError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct RedisEndpoint {
  std::string host;  // empty for a Unix socket
  std::uint16_t port = 6379;
  std::string socket_path;              // set for a Unix socket
  std::optional<std::string> username;  // Redis 6 ACL user; AUTH <user> <password>
  std::optional<std::string> password;
  int db = 0;

  bool is_unix_socket() const { return !socket_path.empty(); }
  // host:port or the socket path, for log lines (never the password).
  std::string describe() const;
};

RedisEndpoint parse_redis_url(std::string_view url);

}  // namespace rr::redis
