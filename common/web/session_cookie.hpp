// The rr_session cookie's name and the Set-Cookie values that start and end a session (which
// session a request's cookie names is session_lookup.hpp's).
#pragma once

#include <string>
#include <string_view>

#include "common/web/session_settings.hpp"

namespace rr::web {

inline constexpr std::string_view kSessionCookie = "rr_session";

// Set-Cookie for a new session: lives SESSION_TTL, Secure with SESSION_COOKIE_SECURE.
std::string session_cookie(std::string_view token, const SessionSettings& settings);
// Set-Cookie that makes the browser drop the cookie `name` now.
std::string expired_cookie(std::string_view name, const SessionSettings& settings);

}  // namespace rr::web
