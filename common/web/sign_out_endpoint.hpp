// POST /session/end: deletes the session's row and the cookie, 303 to /.
#pragma once

#include "common/api/endpoint.hpp"
#include "common/web/session_store.hpp"

namespace rr::web {

class SignOutEndpoint : public api::Endpoint {
 public:
  explicit SignOutEndpoint(SessionStore& sessions) : sessions_(sessions) {}
  // 403 when the form's CSRF token is not the session's (another site cannot sign a rider out);
  // without a live session there is nothing to end: the cookie is dropped and 303 to /.
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  SessionStore& sessions_;
};

}  // namespace rr::web
