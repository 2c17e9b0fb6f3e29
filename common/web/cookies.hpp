// Cookies, both ways. The Cookie header is read strictly and within bounds, since any client may
// send anything: one header of at most kMaxCookieHeaderBytes and kMaxCookies pairs, else no cookie
// is read at all; a name that appears twice (one planted by a sibling site, say) is ambiguous and
// counts as absent. Set-Cookie is always HttpOnly, SameSite=Strict and Path=/.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/http/message.hpp"

namespace rr::web {

inline constexpr std::size_t kMaxCookieHeaderBytes = 8192;
inline constexpr std::size_t kMaxCookies = 64;

// The value of the cookie `name`, when the request's Cookie header is within the bounds and names
// it exactly once. Pairs that are not name=value are skipped; a value in double quotes is
// unquoted.
std::optional<std::string> cookie_value(const http::Request& request, std::string_view name);

struct CookieAttributes {
  std::chrono::seconds max_age{0};  // 0: expire the cookie now
  bool secure = false;
};
// The Set-Cookie header's value: name=value; Path=/; Max-Age=N; HttpOnly; SameSite=Strict[; Secure].
// `value` must be cookie-octets (the callers' are hex).
std::string set_cookie(std::string_view name, std::string_view value, const CookieAttributes& attributes);

}  // namespace rr::web
