// The one registry of flows, shared by the API and the completer. An entry names an endpoint's
// route (method and path template) and how its flow is built; the API routes a request to its
// entry, and the completer finds the entry of an abandoned key from the key's stored method and
// path, so it finishes every registered kind with no code of its own for any. How a request's
// parameters are read is the HTTP edge's (common/api/flow_params.hpp), so the completer, which
// only ever runs stored parameters, links no request parsing. A new endpoint adds its own files,
// one line to kFlows (flow_registry.cpp) and one to the edge's readers (flow_params.cpp).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/flow_environment/flow_environment.hpp"
#include "common/idempotency/phase.hpp"

namespace rr::flows {

// The `{name}` segments of a path template, in order, as the path spelled them.
using PathArguments = std::vector<std::string>;

struct RegisteredFlow {
  std::string_view name;           // for logs: "create_ride", "cancel_ride"
  std::string_view method;         // "POST"
  std::string_view path_template;  // "/rides/{id}/cancel": a {segment} matches one non-empty segment
  // The flow's phases; they own what they capture, so the flow may outlive the environment.
  idempotency::Flow (*make_flow)(const FlowEnvironment& environment);
};

// Every registered flow.
std::span<const RegisteredFlow> all_flows();

// The path's arguments when it matches the template, else nothing.
std::optional<PathArguments> match_path(std::string_view path_template, std::string_view path);

// The flow whose template the path matches (any method), with the path's arguments.
struct FoundFlow {
  const RegisteredFlow* flow = nullptr;
  PathArguments arguments;
};
std::optional<FoundFlow> find_flow_by_path(std::string_view path);
// The flow for this method and path, or nothing (a stored key's, for the completer).
std::optional<FoundFlow> find_flow(std::string_view method, std::string_view path);

}  // namespace rr::flows
