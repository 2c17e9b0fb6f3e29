// GET /rides: the caller's rides, newest first, a page at a time (page_query.hpp).
#pragma once

#include "common/api/callers_rows_endpoint.hpp"

namespace rr::api {

class ListRidesEndpoint : public CallersRowsEndpoint {
 public:
  using CallersRowsEndpoint::CallersRowsEndpoint;
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  // 400 for a malformed page query.
  void validate(const http::Request& request, const flows::PathArguments& arguments) const override;
};

}  // namespace rr::api
