// Serves the metrics registry over HTTP for a daemon.
#include "common/daemon/metrics_endpoint.hpp"

#include "common/base/error_body.hpp"
#include "common/base/log.hpp"
#include "common/http/server.hpp"
#include "common/metrics/registry.hpp"

namespace rr::daemon {

MetricsEndpoint::MetricsEndpoint(const std::string& address, std::uint16_t port, Page page) {
  if (port == 0) return;
  if (!page) page = [] { return metrics::default_registry().render(); };
  http::ServerOptions options;
  options.address = address;
  options.port = port;
  options.worker_threads = 1;  // scrapes are rare and cheap
  server_ = std::make_unique<http::Server>(options, [page = std::move(page)](const http::Request& request) {
    if (request.method == "GET" && request.path == "/metrics") {
      return http::Response{200, "text/plain; version=0.0.4", {}, page()};
    }
    if (request.method == "GET" && request.path == "/healthz") {
      return http::Response{200, "application/json", {}, "{\"status\":\"ok\"}"};
    }
    return http::Response{404, "application/json", {}, error_body("invalid_request_error", "No such route.")};
  });
  server_->start();
  log::info("metrics endpoint listening", {{"address", address}, {"port", server_->port()}});
}

MetricsEndpoint::~MetricsEndpoint() {
  if (server_) server_->stop();
}

std::uint16_t MetricsEndpoint::port() const { return server_ ? server_->port() : 0; }

}  // namespace rr::daemon
