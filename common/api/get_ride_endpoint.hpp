// GET /rides/{id}: the caller's own ride; anyone else's, or an id that cannot be one, is a 404.
#pragma once

#include "common/api/callers_rows_endpoint.hpp"

namespace rr::api {

class GetRideEndpoint : public CallersRowsEndpoint {
 public:
  using CallersRowsEndpoint::CallersRowsEndpoint;
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  void validate(const http::Request& request, const flows::PathArguments& arguments) const override;
};

}  // namespace rr::api
