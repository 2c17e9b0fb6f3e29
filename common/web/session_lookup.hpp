// Which rider session a request's rr_session cookie names, at a bounded cost to the database: a
// cookie that names no session is a failed authentication of its address, as an unknown bearer
// token is, and an address past AUTH_FAILURES_PER_MINUTE has its cookies refused without a lookup
// unless this process has found their session before.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/auth/auth_failure_throttle.hpp"
#include "common/base/ttl_cache.hpp"
#include "common/http/message.hpp"
#include "common/web/session_store.hpp"

namespace rr::web {

struct CookieSession {
  std::string token;  // the cookie's value: to end the session with; never logged or rendered
  RiderSession session;
};

class SessionLookup {
 public:
  SessionLookup(SessionStore& sessions, auth::AuthFailureThrottle& failures);

  // The unexpired session the request's cookie names; nothing without a cookie, for a cookie that
  // is not a session token's shape (no lookup), or for one that names no live session (a failure
  // of the request's address). Throws api::ApiError 429 with Retry-After, before any lookup, when
  // the address is throttled and the cookie's session is not one this process has found or
  // created: the page boundary answers it as a page.
  std::optional<CookieSession> of(const http::Request& request);

  // A session just created by signing in is proven: its pages are served from a throttled
  // address too, as the token cache's users are.
  void signed_in(std::string_view token);

  const SessionSettings& settings() const { return sessions_.settings(); }

 private:
  SessionStore& sessions_;
  auth::AuthFailureThrottle& failures_;
  // SHA-256 hashes of cookie tokens whose session was found (or created) here lately. Being
  // remembered only exempts a cookie from the throttle; it is looked up every time all the same,
  // so a session signed out or expired ends at once, and its next lookup forgets it.
  base::TtlCache<bool> proven_;
};

}  // namespace rr::web
