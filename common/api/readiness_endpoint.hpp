// GET /readyz: whether load balancers should send this process traffic. 503 once the drain before
// a graceful stop has begun, or while the database does not answer its pings.
#pragma once

#include <atomic>

#include "common/api/database_readiness.hpp"
#include "common/api/endpoint.hpp"

namespace rr::api {

class ReadinessEndpoint : public Endpoint {
 public:
  ReadinessEndpoint(const DatabaseReadiness& readiness, const std::atomic<bool>& draining)
      : readiness_(readiness), draining_(draining) {}

  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  const DatabaseReadiness& readiness_;
  const std::atomic<bool>& draining_;
};

}  // namespace rr::api
