// Signing in: the double-submit CSRF check, then the token, then a new session.
#include "common/web/sign_in_endpoint.hpp"

#include "common/base/log.hpp"
#include "common/web/cookies.hpp"
#include "common/web/csrf.hpp"
#include "common/web/page_boundary.hpp"
#include "common/web/page_form.hpp"
#include "common/web/page_response.hpp"
#include "common/web/session_cookie.hpp"
#include "common/web/sign_in_form.hpp"

namespace rr::web {

http::Response SignInEndpoint::handle(const http::Request& request, const flows::PathArguments&) {
  return within_page_boundary([&] {
    const auto& settings = sessions_.settings();
    auto form = PageForm::parse(request);
    auto cookie = cookie_value(request, kSignInCsrfCookie);
    if (!form || !cookie || !csrf_matches(*cookie, form->value_or_empty("csrf_token"))) {
      return sign_in_answer(request, settings, 403, "This sign-in form has expired. Sign in again.");
    }
    // The token is never logged, echoed or kept: only its hash reaches the database.
    auto token = form->field("token");
    // A token the cache knows is proven, so it signs in from a throttled address as it would be
    // served there as a bearer token (Authenticator::user_of).
    bool proven = token && auth::cached_user(tokens_, *token);
    if (!proven) {
      if (auto seconds = failures_.retry_after(request.remote_address)) {
        auto refused = sign_in_answer(request, settings, 429, "Too many failed sign-ins from here. Try again later.");
        refused.with_header("Retry-After", std::to_string(*seconds));
        return refused;
      }
    }
    auto created = token ? sessions_.sign_in(*token) : std::nullopt;
    if (!created) {
      failures_.record_failure(request.remote_address);
      return sign_in_answer(request, settings, 401, "That API token is not valid.");
    }
    lookup_.signed_in(created->token);
    log::info("rider signed in", {{"user_id", created->session.user.id}});
    auto response = see_other("/");
    response.with_header("Set-Cookie", session_cookie(created->token, settings));
    response.with_header("Set-Cookie", expired_cookie(kSignInCsrfCookie, settings));
    return response;
  });
}

}  // namespace rr::web
