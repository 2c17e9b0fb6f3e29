// Cookie header parsing (RFC 6265 section 4.2.1, strictly) and Set-Cookie rendering.
#include "common/web/cookies.hpp"

namespace rr::web {
namespace {

bool is_token_char(unsigned char c) {
  if (c <= 0x20 || c >= 0x7f) return false;
  return std::string_view("()<>@,;:\\\"/[]?={}").find(static_cast<char>(c)) == std::string_view::npos;
}

// cookie-octet: printable US-ASCII but space, '"', ',', ';' and '\'.
bool is_cookie_octet(unsigned char c) {
  return c >= 0x21 && c <= 0x7e && c != '"' && c != ',' && c != ';' && c != '\\';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// The pair's value when it is name=value with a valid name and value, else nothing.
std::optional<std::pair<std::string_view, std::string_view>> parse_pair(std::string_view pair) {
  auto eq = pair.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  auto name = trim(pair.substr(0, eq));
  auto value = trim(pair.substr(eq + 1));
  if (name.empty()) return std::nullopt;
  for (unsigned char c : name) {
    if (!is_token_char(c)) return std::nullopt;
  }
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
  for (unsigned char c : value) {
    if (!is_cookie_octet(c)) return std::nullopt;
  }
  return std::pair{name, value};
}

}  // namespace

std::optional<std::string> cookie_value(const http::Request& request, std::string_view name) {
  if (request.has_repeated_header("Cookie")) return std::nullopt;
  auto header = request.header("Cookie");
  if (!header || header->size() > kMaxCookieHeaderBytes) return std::nullopt;
  std::optional<std::string> found;
  std::size_t pairs = 0;
  std::string_view rest = *header;
  while (!rest.empty()) {
    auto end = rest.find(';');
    auto pair = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (trim(pair).empty()) continue;
    if (++pairs > kMaxCookies) return std::nullopt;
    auto parsed = parse_pair(pair);
    if (!parsed || parsed->first != name) continue;
    if (found) return std::nullopt;  // twice: which one the server set cannot be told
    found = std::string(parsed->second);
  }
  return found;
}

std::string set_cookie(std::string_view name, std::string_view value, const CookieAttributes& attributes) {
  std::string out;
  out.append(name).append("=").append(value);
  out += "; Path=/; Max-Age=" + std::to_string(attributes.max_age.count()) + "; HttpOnly; SameSite=Strict";
  if (attributes.secure) out += "; Secure";
  return out;
}

}  // namespace rr::web
