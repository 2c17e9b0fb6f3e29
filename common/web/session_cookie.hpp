// The rr_session cookie: which session a request belongs to, and the Set-Cookie values that start
// and end one.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/http/message.hpp"
#include "common/web/session_store.hpp"

namespace rr::web {

inline constexpr std::string_view kSessionCookie = "rr_session";

// The unexpired session the request's rr_session cookie names; nothing without a valid one.
std::optional<RiderSession> session_of(const http::Request& request, SessionStore& sessions);
// Set-Cookie for a new session: lives SESSION_TTL, Secure with SESSION_COOKIE_SECURE.
std::string session_cookie(std::string_view token, const SessionSettings& settings);
// Set-Cookie that makes the browser drop the cookie `name` now.
std::string expired_cookie(std::string_view name, const SessionSettings& settings);

}  // namespace rr::web
