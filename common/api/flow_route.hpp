// A registered flow's route (common/flows/flow_registry.hpp) as an endpoint of the route table:
// the generic flow endpoint, told which flow the route runs.
#pragma once

#include "common/api/endpoint.hpp"
#include "common/api/flow_endpoint.hpp"

namespace rr::api {

class FlowRoute : public Endpoint {
 public:
  FlowRoute(FlowEndpoint& flows, const flows::RegisteredFlow& flow) : flows_(flows), flow_(flow) {}

  // Validation and replays of keys this process saw finish (FlowEndpoint::answer_in_memory).
  std::optional<http::Response> answer_in_memory(const http::Request& request,
                                                 const flows::PathArguments& arguments) override;
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;
  std::optional<std::string> idempotency_key(const http::Request& request) const override;

 private:
  FlowEndpoint& flows_;
  const flows::RegisteredFlow& flow_;
};

}  // namespace rr::api
