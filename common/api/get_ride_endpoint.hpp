// GET /rides/{id}: the caller's own ride; anyone else's, or an id that cannot be one, is a 404.
#pragma once

#include "common/api/authenticator.hpp"
#include "common/api/endpoint.hpp"
#include "common/db/connection_pool.hpp"

namespace rr::api {

class GetRideEndpoint : public Endpoint {
 public:
  GetRideEndpoint(db::ConnectionPool& pool, Authenticator& authenticator)
      : pool_(pool), authenticator_(authenticator) {}

  // 401 for a token that cannot be one of ours, then 404 for an id that cannot be a ride's.
  std::optional<http::Response> answer_in_memory(const http::Request& request,
                                                 const flows::PathArguments& arguments) override;
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  db::ConnectionPool& pool_;
  Authenticator& authenticator_;
};

}  // namespace rr::api
