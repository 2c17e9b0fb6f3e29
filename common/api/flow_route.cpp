// Hands a routed request to the generic flow endpoint with its flow and path arguments.
#include "common/api/flow_route.hpp"

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"

namespace rr::api {

std::optional<http::Response> FlowRoute::answer_in_memory(const http::Request& request,
                                                          const flows::PathArguments& arguments) {
  return flows_.answer_in_memory(request, {&flow_, arguments});
}

http::Response FlowRoute::handle(const http::Request& request, const flows::PathArguments& arguments) {
  return flows_.handle(request, {&flow_, arguments});
}

std::optional<std::string> FlowRoute::idempotency_key(const http::Request& request) const {
  try {
    return parse_idempotency_key(request);
  } catch (const ApiError&) {
    return std::nullopt;  // no valid key: nothing to name
  }
}

}  // namespace rr::api
