// The throttled session lookup.
#include "common/web/session_lookup.hpp"

#include <chrono>

#include "common/api_requests/api_error.hpp"
#include "common/auth/tokens.hpp"
#include "common/web/cookies.hpp"
#include "common/web/session_cookie.hpp"
#include "common/web/session_token.hpp"

namespace rr::web {
namespace {

// Enough for every rider active within the hour on one API (about 100 bytes each); a rider away
// longer is unproven again until one lookup from an address that is not throttled.
constexpr std::size_t kProvenSessions = 10000;
constexpr auto kProvenFor = std::chrono::hours(1);

}  // namespace

SessionLookup::SessionLookup(SessionStore& sessions, auth::AuthFailureThrottle& failures)
    : sessions_(sessions), failures_(failures), proven_(kProvenSessions, kProvenFor) {}

std::optional<CookieSession> SessionLookup::of(const http::Request& request) {
  auto token = cookie_value(request, kSessionCookie);
  // A cookie of another shape is never looked up, so it costs the database nothing.
  if (!token || !looks_like_session_token(*token)) return std::nullopt;
  std::string hash = auth::sha256(*token);
  if (!proven_.find(hash)) {
    if (auto seconds = failures_.retry_after(request.remote_address)) {
      throw api::ApiError(429, "rate_limit_error",
                          "Too many failed sign-ins or unknown sessions from this address. Try again in " +
                              std::to_string(*seconds) + " s.",
                          *seconds);
    }
  }
  auto session = sessions_.find(*token);
  if (!session) {
    failures_.record_failure(request.remote_address);
    proven_.forget(hash);
    return std::nullopt;
  }
  proven_.remember(std::move(hash), true);
  return CookieSession{std::move(*token), std::move(*session)};
}

void SessionLookup::signed_in(std::string_view token) { proven_.remember(auth::sha256(token), true); }

}  // namespace rr::web
