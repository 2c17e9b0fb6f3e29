// GET /my/rides/{id}: one of the signed-in rider's rides, its charge and fare. Any other ride, and
// any ride without a session, is a 404 page.
#pragma once

#include "common/api/endpoint.hpp"
#include "common/db/connection_pool.hpp"
#include "common/web/signed_in_riders.hpp"

namespace rr::web {

class RidePageEndpoint : public api::Endpoint {
 public:
  RidePageEndpoint(db::ConnectionPool& pool, SignedInRiders& riders) : pool_(pool), riders_(riders) {}
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  db::ConnectionPool& pool_;
  SignedInRiders& riders_;
};

}  // namespace rr::web
