// POST /session: the sign-in form (token, csrf_token) turned into a session cookie, 303 to /.
#pragma once

#include "common/api/endpoint.hpp"
#include "common/auth/auth_failure_throttle.hpp"
#include "common/auth/token_cache.hpp"
#include "common/web/session_lookup.hpp"
#include "common/web/session_store.hpp"

namespace rr::web {

class SignInEndpoint : public api::Endpoint {
 public:
  SignInEndpoint(SessionStore& sessions, SessionLookup& lookup, auth::AuthFailureThrottle& failures,
                 auth::TokenCache& tokens)
      : sessions_(sessions), lookup_(lookup), failures_(failures), tokens_(tokens) {}
  // 403 for a CSRF pair that does not match (nothing written), 401 for a token that is not one of
  // ours; both show the form again. 429 with Retry-After, without a lookup, when the address has
  // failed too often and the token cache does not know the token.
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  SessionStore& sessions_;
  SessionLookup& lookup_;                // told of each new session, which is proven
  auth::AuthFailureThrottle& failures_;  // a sign-in's token is unproven until it is looked up,
  auth::TokenCache& tokens_;             // unless the cache knows it as the bearer path does
};

}  // namespace rr::web
