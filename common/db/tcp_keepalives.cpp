// Appends the TCP liveness parameters to a libpq URI, leaving those it sets alone.
#include "common/db/tcp_keepalives.hpp"

#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace rr::db {
namespace {

// The parameter names the URI's query already sets (libpq's names carry no percent-encoding).
std::set<std::string, std::less<>> query_names(std::string_view url) {
  std::set<std::string, std::less<>> names;
  auto query_start = url.find('?');
  if (query_start == std::string_view::npos) return names;
  std::string_view query = url.substr(query_start + 1);
  while (!query.empty()) {
    auto end = query.find('&');
    std::string_view pair = query.substr(0, end);
    names.emplace(pair.substr(0, pair.find('=')));
    if (end == std::string_view::npos) break;
    query.remove_prefix(end + 1);
  }
  return names;
}

}  // namespace

std::string with_tcp_keepalives(const std::string& url, std::chrono::milliseconds tcp_user_timeout) {
  const std::vector<std::pair<std::string, std::string>> wanted = {
      {"keepalives", "1"},
      {"keepalives_idle", std::to_string(kKeepalivesIdle.count())},
      {"keepalives_interval", std::to_string(kKeepalivesInterval.count())},
      {"keepalives_count", std::to_string(kKeepalivesCount)},
      {"tcp_user_timeout", std::to_string(tcp_user_timeout.count())},
  };
  auto present = query_names(url);
  std::string result = url;
  bool has_query = url.find('?') != std::string::npos;
  for (const auto& [name, value] : wanted) {
    if (present.contains(name)) continue;
    if (!has_query) {
      result += '?';
      has_query = true;
    } else if (!result.ends_with('?') && !result.ends_with('&')) {
      result += '&';
    }
    result.append(name).append("=").append(value);
  }
  return result;
}

}  // namespace rr::db
