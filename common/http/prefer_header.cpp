// Splitting Prefer into preferences without being fooled by commas or semicolons inside quotes.
#include "common/http/prefer_header.hpp"

#include <algorithm>
#include <limits>
#include <string_view>
#include <vector>

namespace rr::http {
namespace {

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint32_t>::max();

std::string_view trim_preference(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// `text` cut at each `separator` outside a quoted-string (whose backslash escapes a character).
std::vector<std::string_view> split_outside_quotes(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  bool quoted = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted && c == '\\') {
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && c == separator) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

// "5" or "\"5\"" as seconds; nothing for anything else.
std::optional<std::uint64_t> seconds_of(std::string_view value) {
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
  if (value.empty()) return std::nullopt;
  std::uint64_t seconds = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    seconds = std::min(kSaturated, seconds * 10 + static_cast<std::uint64_t>(c - '0'));
  }
  return seconds;
}

}  // namespace

std::optional<std::uint64_t> preferred_wait_seconds(const Headers& headers) {
  for (const auto& [name, value] : headers) {
    if (!iequals(name, "Prefer")) continue;
    for (auto preference : split_outside_quotes(value, ',')) {
      // The preference itself, before its parameters.
      auto head = trim_preference(split_outside_quotes(preference, ';').front());
      if (head.empty()) continue;  // an empty list element
      auto equals = head.find('=');
      auto token = trim_preference(head.substr(0, equals));
      if (!iequals(token, "wait")) continue;
      // The first instance decides, parsable or not (RFC 7240 section 2).
      if (equals == std::string_view::npos) return std::nullopt;
      return seconds_of(trim_preference(head.substr(equals + 1)));
    }
  }
  return std::nullopt;
}

}  // namespace rr::http
