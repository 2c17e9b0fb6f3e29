// A process's optional Prometheus endpoint (METRICS_PORT, bound to METRICS_ADDRESS): GET /metrics
// renders the process-wide registry (or the page a caller supplies, as the API adds its pool's
// gauges), GET /healthz answers while the process lives. A port of its own, loopback by default,
// keeps internal numbers off a public listener.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace rr::http {
class Server;
}

namespace rr::daemon {

class MetricsEndpoint {
 public:
  // The Prometheus text a scrape answers with.
  using Page = std::function<std::string()>;
  // Port 0 means "no endpoint": nothing is started. Without `page`, the default registry.
  MetricsEndpoint(const std::string& address, std::uint16_t port, Page page = {});
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  std::uint16_t port() const;

 private:
  std::unique_ptr<http::Server> server_;
};

}  // namespace rr::daemon
