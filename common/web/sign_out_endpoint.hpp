// POST /session/end: deletes the session's row and the cookie, 303 to /.
#pragma once

#include "common/api/endpoint.hpp"
#include "common/web/session_lookup.hpp"
#include "common/web/session_store.hpp"

namespace rr::web {

class SignOutEndpoint : public api::Endpoint {
 public:
  SignOutEndpoint(SessionLookup& lookup, SessionStore& sessions) : lookup_(lookup), sessions_(sessions) {}
  // 403 when the form's CSRF token is not the session's (another site cannot sign a rider out);
  // without a live session there is nothing to end: the cookie is dropped and 303 to /. A throttled
  // address's unproven cookie gets the 429 page (SessionLookup::of): its session may be live, and
  // saying it was ended would be untrue.
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  SessionLookup& lookup_;
  SessionStore& sessions_;
};

}  // namespace rr::web
