// The session cookie's Set-Cookie values.
#include "common/web/session_cookie.hpp"

#include "common/web/cookies.hpp"

namespace rr::web {

std::string session_cookie(std::string_view token, const SessionSettings& settings) {
  return set_cookie(kSessionCookie, token, {settings.ttl, settings.cookie_secure});
}

std::string expired_cookie(std::string_view name, const SessionSettings& settings) {
  return set_cookie(name, "", {std::chrono::seconds(0), settings.cookie_secure});
}

}  // namespace rr::web
