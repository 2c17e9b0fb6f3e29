// CSRF tokens of the rider pages. The sign-in form has no session yet: its token is a double-submit
// pair, the same random value in the rr_csrf cookie and in the form's hidden field (a cross-site
// page can make a browser post the form but can neither read nor set our cookie). The forms of a
// signed-in page carry the session's own token (RiderSession::csrf_token).
#pragma once

#include <string>
#include <string_view>

namespace rr::web {

inline constexpr std::string_view kSignInCsrfCookie = "rr_csrf";

// 64 hex characters from 32 random bytes.
std::string new_csrf_token();
// True when `given` has the form of a token and equals `expected`, compared in constant time.
bool csrf_matches(std::string_view expected, std::string_view given);

}  // namespace rr::web
