// Readiness from the drain flag and the readiness pinger, never from the request pool.
#include "common/api/readiness_endpoint.hpp"

#include "common/api/outcome_answers.hpp"

namespace rr::api {

http::Response ReadinessEndpoint::handle(const http::Request&, const flows::PathArguments&) {
  if (draining_) return error_response(503, "api_error", "Not ready: the server is shutting down.");
  // Not the request pool's state: a busy API still serves, and a balancer that took every busy
  // API out of rotation would turn overload into an outage.
  if (!readiness_.database_reachable()) return error_response(503, "api_error", "Not ready: database unavailable.");
  if (auto reason = fence_.closed_because()) {
    return error_response(503, "api_error",
                          "Not ready: writes are closed until reconciliation has run (" + *reason + ").");
  }
  return http::Response{200, "application/json", {}, "{\"status\":\"ready\"}"};
}

}  // namespace rr::api
