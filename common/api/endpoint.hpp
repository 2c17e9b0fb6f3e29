// One endpoint of the API as a unit: what it answers from memory (on the server's I/O thread) and
// what it answers with its collaborators (on a worker). The router (common/api_app/'s
// RequestPipeline) finds it by the route table (routes.hpp there) and wraps it in the error
// boundary; a test constructs it with the collaborators it needs and calls it without a socket.
#pragma once

#include <optional>
#include <string>

#include "common/flows/flow_registry.hpp"
#include "common/http/message.hpp"

namespace rr::api {

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // An answer that needs neither a database nor a wait: a validation error, a replay from memory,
  // a liveness answer. Nothing when the request needs handle(). May throw ApiError for a
  // validation error. Never blocks.
  virtual std::optional<http::Response> answer_in_memory(const http::Request& request,
                                                         const flows::PathArguments& arguments) {
    return std::nullopt;
  }
  // The whole request. Throws ApiError for what the client must be told; anything else thrown is
  // the error boundary's to answer.
  virtual http::Response handle(const http::Request& request, const flows::PathArguments& arguments) = 0;
  // The request's Idempotency-Key when the endpoint takes one and it is valid, so an answer made
  // outside the endpoint (a 429, a 503 for an outage) names it; nothing otherwise.
  virtual std::optional<std::string> idempotency_key(const http::Request& request) const { return std::nullopt; }
};

}  // namespace rr::api
