// REDIS_URL parsing, strict enough that a typo fails at start rather than at the first push.
#include "common/redis/redis_url.hpp"

#include <charconv>

namespace rr::redis {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Passwords with '@', ':' or '/' must be percent-encoded in a URL; decode them.
std::string percent_decode(std::string_view text, const char* what) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) throw RedisUrlError(std::string("bad percent-encoding in the ") + what);
    int hi = hex_digit(text[i + 1]), lo = hex_digit(text[i + 2]);
    if (hi < 0 || lo < 0) throw RedisUrlError(std::string("bad percent-encoding in the ") + what);
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

int parse_db(std::string_view text) {
  int db = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), db);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || db < 0 || db > 1'000'000) {
    throw RedisUrlError("the database number must be a non-negative integer");
  }
  return db;
}

std::uint16_t parse_port(std::string_view text) {
  unsigned port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || port < 1 || port > 65535) {
    throw RedisUrlError("the port must be a number from 1 to 65535");
  }
  return static_cast<std::uint16_t>(port);
}

// The query part of a unix:// URL: only db=N and password=... are understood.
void parse_socket_query(std::string_view query, RedisEndpoint& endpoint) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    if (key == "db") {
      endpoint.db = parse_db(value);
    } else if (key == "password") {
      endpoint.password = percent_decode(value, "password");
    } else {
      throw RedisUrlError("unknown parameter '" + std::string(key) + "' (only db and password are understood)");
    }
  }
}

RedisEndpoint parse_socket(std::string_view rest) {
  RedisEndpoint endpoint;
  auto question = rest.find('?');
  endpoint.socket_path = std::string(rest.substr(0, question));
  if (endpoint.socket_path.empty() || endpoint.socket_path.front() != '/') {
    throw RedisUrlError("a Unix socket path must be absolute (unix:///path/to/redis.sock)");
  }
  if (question != std::string_view::npos) parse_socket_query(rest.substr(question + 1), endpoint);
  return endpoint;
}

RedisEndpoint parse_tcp(std::string_view rest) {
  RedisEndpoint endpoint;
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash + 1);
    if (!path.empty()) endpoint.db = parse_db(path);
  }
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    auto colon = userinfo.find(':');
    if (colon == std::string_view::npos) {
      // redis://secret@host is how several clients spell a password-only URL.
      if (!userinfo.empty()) endpoint.password = percent_decode(userinfo, "password");
    } else {
      if (colon > 0) endpoint.username = percent_decode(userinfo.substr(0, colon), "user name");
      endpoint.password = percent_decode(userinfo.substr(colon + 1), "password");
    }
  }
  std::string_view port_text;
  if (authority.starts_with('[')) {  // [::1]:6379
    auto close = authority.find(']');
    if (close == std::string_view::npos) throw RedisUrlError("an IPv6 address must be closed by ']'");
    endpoint.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw RedisUrlError("expected ':' and a port after the IPv6 address");
      port_text = after.substr(1);
      endpoint.port = parse_port(port_text);
    }
  } else {
    auto colon = authority.find(':');
    endpoint.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) endpoint.port = parse_port(authority.substr(colon + 1));
  }
  if (endpoint.host.empty()) throw RedisUrlError("the host is missing (redis://host:port/db)");
  return endpoint;
}

}  // namespace

std::string RedisEndpoint::describe() const {
  if (is_unix_socket()) return socket_path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

RedisEndpoint parse_redis_url(std::string_view url) {
  if (url.starts_with("redis://")) return parse_tcp(url.substr(8));
  if (url.starts_with("unix://")) return parse_socket(url.substr(7));
  if (url.starts_with("/")) return parse_socket(url);
  if (url.starts_with("rediss://")) throw RedisUrlError("TLS (rediss://) is not supported by this build's hiredis");
  throw RedisUrlError("expected redis://host:port/db, unix:///path/to/socket or /path/to/socket");
}

}  // namespace rr::redis
