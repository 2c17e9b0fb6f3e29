// GET /readyz: whether load balancers should send this process traffic. 503 once the drain before
// a graceful stop has begun, while the database does not answer its pings, or while a write fence
// is open (a restore waiting for reconciliation): reads still work, writes would be refused.
#pragma once

#include <atomic>

#include "common/api/database_readiness.hpp"
#include "common/api/endpoint.hpp"
#include "common/api/write_fence_watch.hpp"

namespace rr::api {

class ReadinessEndpoint : public Endpoint {
 public:
  ReadinessEndpoint(const DatabaseReadiness& readiness, const std::atomic<bool>& draining, const WriteFenceWatch& fence)
      : readiness_(readiness), draining_(draining), fence_(fence) {}

  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  const DatabaseReadiness& readiness_;
  const std::atomic<bool>& draining_;
  const WriteFenceWatch& fence_;
};

}  // namespace rr::api
