// GET /: the booking form and the rider's recent rides when signed in, the sign-in form otherwise.
#pragma once

#include "common/api/endpoint.hpp"
#include "common/db/connection_pool.hpp"
#include "common/web/session_store.hpp"
#include "common/web/signed_in_riders.hpp"

namespace rr::web {

class HomePageEndpoint : public api::Endpoint {
 public:
  HomePageEndpoint(db::ConnectionPool& pool, SessionStore& sessions, SignedInRiders& riders)
      : pool_(pool), sessions_(sessions), riders_(riders) {}
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  db::ConnectionPool& pool_;
  SessionStore& sessions_;
  SignedInRiders& riders_;
};

}  // namespace rr::web
