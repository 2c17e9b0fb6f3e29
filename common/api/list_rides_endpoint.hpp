// GET /rides: the caller's rides, newest first, a page at a time (page_query.hpp).
#pragma once

#include "common/api/authenticator.hpp"
#include "common/api/endpoint.hpp"
#include "common/db/connection_pool.hpp"

namespace rr::api {

class ListRidesEndpoint : public Endpoint {
 public:
  ListRidesEndpoint(db::ConnectionPool& pool, Authenticator& authenticator)
      : pool_(pool), authenticator_(authenticator) {}

  // 401 for a token that cannot be one of ours, then 400 for a malformed page query.
  std::optional<http::Response> answer_in_memory(const http::Request& request,
                                                 const flows::PathArguments& arguments) override;
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  db::ConnectionPool& pool_;
  Authenticator& authenticator_;
};

}  // namespace rr::api
