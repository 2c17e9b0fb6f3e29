// The table's entries and the matching of a request against them.
#include "common/api_app/routes.hpp"

#include <algorithm>
#include <vector>

#include "common/api/flow_route.hpp"
#include "common/api/get_ride_endpoint.hpp"
#include "common/api/health_endpoint.hpp"
#include "common/api/list_rides_endpoint.hpp"
#include "common/api/openapi_endpoint.hpp"
#include "common/api/outcome_answers.hpp"
#include "common/api/readiness_endpoint.hpp"
#include "common/web/book_endpoint.hpp"
#include "common/web/home_page_endpoint.hpp"
#include "common/web/pages.hpp"
#include "common/web/ride_page_endpoint.hpp"
#include "common/web/sign_in_endpoint.hpp"
#include "common/web/sign_out_endpoint.hpp"
#include "common/web/stylesheet_endpoint.hpp"

namespace rr::api {
namespace {

// Every endpoint that is not a registered flow, one line each.
const Route kEndpoints[] = {
    {.method = "GET",
     .path_template = "/rides",
     .needs_user = true,
     .make_endpoint = [](const Route&, const Collaborators& with) -> std::unique_ptr<Endpoint> {
       return std::make_unique<ListRidesEndpoint>(with.pool, with.authenticator);
     }},
    {.method = "GET",
     .path_template = "/rides/{id}",
     .last_argument_takes_rest = true,
     .needs_user = true,
     .make_endpoint = [](const Route&, const Collaborators& with) -> std::unique_ptr<Endpoint> {
       return std::make_unique<GetRideEndpoint>(with.pool, with.authenticator);
     }},
    {.method = "GET",
     .path_template = "/healthz",
     .make_endpoint = [](const Route&, const Collaborators&) -> std::unique_ptr<Endpoint> {
       return std::make_unique<HealthEndpoint>();
     }},
    // The contract (docs/openapi.yaml, compiled in), answered from memory like /healthz.
    {.method = "GET",
     .path_template = kOpenApiPath,
     .make_endpoint = [](const Route&, const Collaborators&) -> std::unique_ptr<Endpoint> {
       return std::make_unique<OpenApiEndpoint>();
     }},
    // Readiness runs one short check; on its own lane it never waits behind requests.
    {.method = "GET",
     .path_template = "/readyz",
     .lane = http::Lane::control,
     .make_endpoint = [](const Route&, const Collaborators& with) -> std::unique_ptr<Endpoint> {
       return std::make_unique<ReadinessEndpoint>(with.readiness, with.draining, with.write_fence);
     }},
    // The rider pages (common/web/): a session cookie, not a bearer token, names the user, and
    // finding it needs the database, so the triage does not count them; the pages that act for a
    // signed-in rider count themselves against the same per-user limit (web::SignedInRiders).
    // Signing in and out are one short statement each and never wait: not counted.
    {.method = "GET",
     .path_template = "/",
     .make_endpoint = [](const Route&, const Collaborators& with) -> std::unique_ptr<Endpoint> {
       return std::make_unique<web::HomePageEndpoint>(with.pool, with.sessions, with.riders);
     }},
    {.method = "POST",
     .path_template = "/session",
     .make_endpoint = [](const Route&, const Collaborators& with) -> std::unique_ptr<Endpoint> {
       return std::make_unique<web::SignInEndpoint>(with.sessions, with.session_lookup, with.failed_auth, with.tokens);
     }},
    {.method = "POST",
     .path_template = "/session/end",
     .make_endpoint = [](const Route&, const Collaborators& with) -> std::unique_ptr<Endpoint> {
       return std::make_unique<web::SignOutEndpoint>(with.session_lookup, with.sessions);
     }},
    {.method = "POST",
     .path_template = "/book",
     .fenced = true,
     .make_endpoint = [](const Route&, const Collaborators& with) -> std::unique_ptr<Endpoint> {
       return std::make_unique<web::BookEndpoint>(with.riders, with.flows);
     }},
    {.method = "GET",
     .path_template = "/my/rides/{id}",
     .last_argument_takes_rest = true,
     .make_endpoint = [](const Route&, const Collaborators& with) -> std::unique_ptr<Endpoint> {
       return std::make_unique<web::RidePageEndpoint>(with.pool, with.riders);
     }},
    // Answered from memory on the I/O thread.
    {.method = "GET",
     .path_template = web::kStylesheetPath,
     .make_endpoint = [](const Route&, const Collaborators&) -> std::unique_ptr<Endpoint> {
       return std::make_unique<web::StylesheetEndpoint>();
     }},
};

std::unique_ptr<Endpoint> make_flow_route(const Route& route, const Collaborators& with) {
  return std::make_unique<FlowRoute>(with.flows, *route.flow);
}

std::vector<Route> build_routes() {
  std::vector<Route> routes;
  for (const auto& flow : flows::all_flows()) {
    routes.push_back({.method = flow.method,
                      .path_template = flow.path_template,
                      .needs_user = true,
                      .fenced = true,
                      // The flow's waits are fiber-aware leaves; the rest goes through fiber::blocking.
                      .lane = http::Lane::fibers,
                      .make_endpoint = make_flow_route,
                      .flow = &flow});
  }
  routes.insert(routes.end(), std::begin(kEndpoints), std::end(kEndpoints));
  return routes;
}

std::optional<flows::PathArguments> match(const Route& route, std::string_view path) {
  if (!route.last_argument_takes_rest) return flows::match_path(route.path_template, path);
  // "/rides/{id}": the literal head "/rides/" as a template of its own, then the rest as {id}.
  auto head = route.path_template.substr(0, route.path_template.rfind('{'));
  if (!path.starts_with(head)) return std::nullopt;
  auto arguments = flows::match_path(head.substr(0, head.size() - 1), path.substr(0, head.size() - 1));
  if (!arguments) return std::nullopt;
  arguments->emplace_back(path.substr(head.size()));
  return arguments;
}

}  // namespace

std::span<const Route> all_routes() {
  static const std::vector<Route> routes = build_routes();
  return routes;
}

RouteLookup find_route(std::string_view method, std::string_view path) {
  RouteLookup lookup;
  auto routes = all_routes();
  for (std::size_t i = 0; i < routes.size() && !lookup.route; ++i) {
    const Route& route = routes[i];
    if (!lookup.path_template.empty() && route.path_template != lookup.path_template) continue;
    auto arguments = match(route, path);
    if (!arguments) continue;
    lookup.path_template = route.path_template;
    if (route.method == method) {
      lookup.route = &route;
      lookup.index = i;
      lookup.arguments = std::move(*arguments);
    }
  }
  // The Allow list only for a refusal (405): a request a route serves, a replay among them, is
  // looked up more than once and never needs it.
  if (lookup.route || lookup.path_template.empty()) return lookup;
  std::vector<std::string_view> methods;
  for (const Route& route : routes) {
    if (route.path_template == lookup.path_template && match(route, path)) methods.push_back(route.method);
  }
  // In a fixed order ("GET, POST"), whatever order the table lists them in.
  std::sort(methods.begin(), methods.end());
  for (auto m : methods) lookup.allow += lookup.allow.empty() ? std::string(m) : ", " + std::string(m);
  return lookup;
}

http::Response routing_refusal(const RouteLookup& lookup) {
  if (lookup.path_template.empty()) return error_response(404, "invalid_request_error", "No such route.");
  auto response = error_response(405, "invalid_request_error", "Method not allowed.");
  response.with_header("Allow", lookup.allow);
  return response;
}

}  // namespace rr::api
