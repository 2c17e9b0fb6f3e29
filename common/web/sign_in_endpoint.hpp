// POST /session: the sign-in form (token, csrf_token) turned into a session cookie, 303 to /.
#pragma once

#include "common/api/endpoint.hpp"
#include "common/web/session_store.hpp"

namespace rr::web {

class SignInEndpoint : public api::Endpoint {
 public:
  explicit SignInEndpoint(SessionStore& sessions) : sessions_(sessions) {}
  // 403 for a CSRF pair that does not match (nothing written), 401 for a token that is not one of
  // ours; both show the form again.
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  SessionStore& sessions_;
};

}  // namespace rr::web
