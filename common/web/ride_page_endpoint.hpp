// GET /my/rides/{id}: one of the signed-in rider's rides, its charge and fare. Any other ride, and
// any ride without a session, is a 404 page.
#pragma once

#include "common/api/endpoint.hpp"
#include "common/db/connection_pool.hpp"
#include "common/web/session_store.hpp"

namespace rr::web {

class RidePageEndpoint : public api::Endpoint {
 public:
  RidePageEndpoint(db::ConnectionPool& pool, SessionStore& sessions) : pool_(pool), sessions_(sessions) {}
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  db::ConnectionPool& pool_;
  SessionStore& sessions_;
};

}  // namespace rr::web
