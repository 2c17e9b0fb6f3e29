// GET /rider.css: the pages' only stylesheet (the CSP allows style-src 'self' and no inline
// style), answered from memory on the I/O thread.
#pragma once

#include "common/api/endpoint.hpp"

namespace rr::web {

class StylesheetEndpoint : public api::Endpoint {
 public:
  std::optional<http::Response> answer_in_memory(const http::Request& request,
                                                 const flows::PathArguments& arguments) override;
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;
};

}  // namespace rr::web
