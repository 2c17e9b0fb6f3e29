// A background daemon's optional Prometheus endpoint (METRICS_PORT): GET /metrics renders the
// process-wide registry, GET /healthz answers while the process lives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace rr::http {
class Server;
}

namespace rr::daemon {

class MetricsEndpoint {
 public:
  // Port 0 means "no endpoint": nothing is started.
  MetricsEndpoint(const std::string& address, std::uint16_t port);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  std::uint16_t port() const;

 private:
  std::unique_ptr<http::Server> server_;
};

}  // namespace rr::daemon
