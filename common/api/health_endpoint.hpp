// GET /healthz: the process is alive. Answered on the I/O thread; the watchdog proves the worker
// pool separately (api/serve.cpp), which is why handle() answers the same on a worker.
#pragma once

#include "common/api/endpoint.hpp"

namespace rr::api {

class HealthEndpoint : public Endpoint {
 public:
  std::optional<http::Response> answer_in_memory(const http::Request&, const flows::PathArguments&) override {
    return alive();
  }
  http::Response handle(const http::Request&, const flows::PathArguments&) override { return alive(); }

 private:
  static http::Response alive() { return http::Response{200, "application/json", {}, "{\"status\":\"ok\"}"}; }
};

}  // namespace rr::api
