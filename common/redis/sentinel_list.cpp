// Parsing of the sentinel settings, strict so that a typo stops the enqueuer at start.
#include "common/redis/sentinel_list.hpp"

#include <algorithm>
#include <charconv>
#include <set>

namespace rr::redis {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::uint16_t parse_port(std::string_view text, std::string_view entry) {
  unsigned port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || port < 1 || port > 65535) {
    throw RedisUrlError("'" + std::string(entry) + "': the port must be a number from 1 to 65535");
  }
  return static_cast<std::uint16_t>(port);
}

RedisEndpoint parse_entry(std::string_view entry) {
  RedisEndpoint endpoint;
  std::string_view host;
  std::string_view port;
  if (entry.starts_with('[')) {
    auto close = entry.find(']');
    if (close == std::string_view::npos || close + 1 >= entry.size() || entry[close + 1] != ':') {
      throw RedisUrlError("'" + std::string(entry) + "': write an IPv6 sentinel as [address]:port");
    }
    host = entry.substr(1, close - 1);
    port = entry.substr(close + 2);
  } else {
    auto colon = entry.rfind(':');
    if (colon == std::string_view::npos) {
      // Sentinels listen on 26379 by convention, but a missing port is more often a mistake.
      throw RedisUrlError("'" + std::string(entry) + "': expected host:port");
    }
    host = entry.substr(0, colon);
    port = entry.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      throw RedisUrlError("'" + std::string(entry) + "': write an IPv6 sentinel as [address]:port");
    }
  }
  if (host.empty()) throw RedisUrlError("'" + std::string(entry) + "': the host is missing");
  // Brackets only ever enclose an IPv6 address: a host holding one could not be written back.
  if (std::any_of(host.begin(), host.end(),
                  [](unsigned char c) { return c <= ' ' || c >= 0x7f || c == '/' || c == '[' || c == ']'; })) {
    throw RedisUrlError("'" + std::string(entry) + "': the host has characters a host name cannot have");
  }
  endpoint.host = std::string(host);
  endpoint.port = parse_port(port, entry);
  return endpoint;
}

}  // namespace

std::vector<RedisEndpoint> parse_sentinel_list(std::string_view text) {
  std::vector<RedisEndpoint> sentinels;
  std::set<std::string> seen;
  while (true) {
    auto comma = text.find(',');
    std::string_view entry = trim(text.substr(0, comma));
    if (entry.empty()) throw RedisUrlError("an empty entry (expected host:port,host:port,...)");
    RedisEndpoint endpoint = parse_entry(entry);
    if (!seen.insert(endpoint.describe()).second) {
      throw RedisUrlError("'" + std::string(entry) + "' is listed twice");
    }
    sentinels.push_back(std::move(endpoint));
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return sentinels;
}

std::string validate_sentinel_master_name(std::string_view name) {
  if (name.empty() || name.size() > 200 ||
      std::any_of(name.begin(), name.end(), [](unsigned char c) { return c <= ' ' || c >= 0x7f; })) {
    throw RedisUrlError("must be 1 to 200 printable characters without spaces, as in `sentinel monitor <name>`");
  }
  return std::string(name);
}

}  // namespace rr::redis
