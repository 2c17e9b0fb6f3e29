// The API process's composition root: the services a request needs (api_services.hpp), built
// once from the settings, and the pipeline that routes and answers requests with them
// (request_pipeline.hpp). api/serve.cpp puts the HTTP server around it; tests call it directly.
#pragma once

#include <optional>
#include <utility>

#include "common/api_app/api_services.hpp"
#include "common/api_app/api_settings.hpp"
#include "common/api_app/request_pipeline.hpp"
#include "common/db/connection_pool.hpp"
#include "common/http/dispatch.hpp"
#include "common/http/message.hpp"
#include "common/idempotency/phase_runner.hpp"

namespace rr::api {

class App {
 public:
  // The services first, then the pipeline over them.
  explicit App(const ApiSettings& settings, idempotency::RunnerOptions runner_options = {})
      : services_(settings, std::move(runner_options)),
        pipeline_(services_.collaborators(), services_.authenticator(), services_.in_flight()) {}

  // The pipeline's (request_pipeline.hpp): a worker's answer, the I/O thread's answers from memory
  // and its triage.
  http::Response handle(const http::Request& request) { return pipeline_.handle(request); }
  std::optional<http::Response> handle_in_memory(const http::Request& request) {
    return pipeline_.handle_in_memory(request);
  }
  http::Dispatch dispatch(http::Request& request) { return pipeline_.dispatch(request); }

  // From now on /readyz answers 503 whatever the database says, so load balancers take this
  // process out of rotation while it still serves what they send meanwhile. Thread-safe; for the
  // drain before a graceful stop.
  void stop_being_ready() { services_.stop_being_ready(); }

  // The Prometheus page (metrics_page.hpp), for METRICS_PORT.
  http::Response metrics_page() { return services_.metrics_page(); }

  db::ConnectionPool& pool() { return services_.pool(); }
  const ApiSettings& settings() const { return services_.settings(); }

 private:
  ApiServices services_;  // declared first: the pipeline's endpoints are built with it
  RequestPipeline pipeline_;
};

}  // namespace rr::api
