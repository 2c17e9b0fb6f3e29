// REDIS_URL parsing, strict enough that a typo fails at start rather than at the first push.
// Boost.URL parses and percent-decodes; this file says what a Redis URL may hold and, when the
// text is no URL at all, which part is wrong, without repeating it (it may hold a password).
#include "common/redis/redis_url.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <cctype>
#include <charconv>

namespace rr::redis {

namespace {

namespace urls = boost::urls;

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

bool bad_percent_encoding(std::string_view text) {
  for (std::size_t at = text.find('%'); at != std::string_view::npos; at = text.find('%', at + 1)) {
    if (at + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[at + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(text[at + 2]))) {
      return true;
    }
  }
  return false;
}

// Boost.URL refused the text: name the part that breaks the grammar, as far as it can be told.
[[noreturn]] void refuse(std::string_view text, const urls::error_code& error) {
  if (bad_percent_encoding(text))
    throw RedisUrlError("bad percent-encoding (a '%' must be followed by two hex digits)");
  if (text.find('[') != std::string_view::npos && text.find(']') == std::string_view::npos) {
    throw RedisUrlError("an IPv6 address must be closed by ']'");
  }
  auto start = text.find("//");
  start = start == std::string_view::npos ? 0 : start + 2;
  auto end = text.find_first_of("/?#", start);
  std::string_view host_and_port = text.substr(start, end == std::string_view::npos ? end : end - start);
  if (auto at = host_and_port.rfind('@'); at != std::string_view::npos) host_and_port = host_and_port.substr(at + 1);
  if (auto colon = host_and_port.rfind(':'); colon != std::string_view::npos && host_and_port.back() != ']') {
    parse_port(host_and_port.substr(colon + 1));  // throws its own message when the port is the fault
  }
  throw RedisUrlError("not a valid URL (" + error.message() + ")");
}

RedisEndpoint tcp_endpoint(const urls::url_view& url) {
  RedisEndpoint endpoint;
  if (url.host_type() == urls::host_type::ipv6) {
    endpoint.host = url.host_ipv6_address().to_string();
  } else {
    endpoint.host = url.host();  // percent-decoded
  }
  if (endpoint.host.empty()) throw RedisUrlError("the host is missing (redis://host:port/db)");
  if (url.has_port()) endpoint.port = parse_port(url.port());
  if (url.has_userinfo()) {
    if (url.has_password()) {
      if (!url.user().empty()) endpoint.username = url.user();
      endpoint.password = url.password();
    } else if (!url.user().empty()) {
      // redis://secret@host is how several clients spell a password-only URL.
      endpoint.password = url.user();
    }
  }
  std::string_view path = url.encoded_path();
  // Boost.URL 1.81 ends a port at its last digit and reads the rest as a path ("h:63x9" is port
  // 63 and path "x9"); after an authority a path starts with '/', so the port was the fault.
  if (!path.empty() && path.front() != '/') throw RedisUrlError("the port must be a number from 1 to 65535");
  if (path.size() > 1) endpoint.db = parse_db(path.substr(1));
  if (url.has_query()) throw RedisUrlError("redis:// URLs take no parameters (the database is the path: /N)");
  return endpoint;
}

// unix:///path?db=N&password=...: only db and password are understood.
RedisEndpoint socket_endpoint(const urls::url_view& url) {
  RedisEndpoint endpoint;
  endpoint.socket_path = url.path();
  if ((url.has_authority() && !url.encoded_host().empty()) || endpoint.socket_path.empty() ||
      endpoint.socket_path.front() != '/') {
    throw RedisUrlError("a Unix socket path must be absolute (unix:///path/to/redis.sock)");
  }
  urls::encoding_opts literal_plus;  // a '+' in a password is a '+', not a space
  literal_plus.space_as_plus = false;
  for (auto param : url.params(literal_plus)) {
    if (param.key == "db") {
      endpoint.db = parse_db(param.value);
    } else if (param.key == "password") {
      endpoint.password = param.value;
    } else if (endpoint.password) {
      // After password=, an unknown "parameter" is likely the rest of a password cut at an
      // unencoded '&': never repeat it.
      throw RedisUrlError(
          "unknown parameter after password= (only db and password are understood; write a '&' in a password as %26)");
    } else {
      throw RedisUrlError("unknown parameter '" + param.key + "' (only db and password are understood)");
    }
  }
  return endpoint;
}

}  // namespace

std::string RedisEndpoint::describe() const {
  if (is_unix_socket()) return socket_path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

RedisEndpoint parse_redis_url(std::string_view text) {
  if (text.starts_with("rediss://")) throw RedisUrlError("TLS (rediss://) is not supported by this build's hiredis");
  // A URL's '#' starts a fragment, which no Redis URL has: an unencoded one in a password would end
  // the authority early and make the password's start the host, which log lines name.
  if (text.find('#') != std::string_view::npos) {
    throw RedisUrlError("a '#' ends the URL early (write a '#' in a password or path as %23)");
  }
  const bool bare_path = text.starts_with("/");
  if (!bare_path && !text.starts_with("redis://") && !text.starts_with("unix://")) {
    throw RedisUrlError("expected redis://host:port/db, unix:///path/to/socket or /path/to/socket");
  }
  if (bare_path) {
    auto parsed = urls::parse_origin_form(text);
    if (!parsed) refuse(text, parsed.error());
    return socket_endpoint(*parsed);
  }
  auto parsed = urls::parse_uri(text);
  if (!parsed) refuse(text, parsed.error());
  return parsed->scheme() == "redis" ? tcp_endpoint(*parsed) : socket_endpoint(*parsed);
}

}  // namespace rr::redis
