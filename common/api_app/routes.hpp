// The route table: method and path template to endpoint, one entry per endpoint. The router
// (RequestPipeline) and the I/O thread's triage both read it, and request metrics take their route
// label from it, so none of them spells a route of its own. Every registered flow (common/flows/flow_registry.hpp)
// is a route here without a line of its own; every other endpoint is one line of kEndpoints
// (routes.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/api/authenticator.hpp"
#include "common/api/database_readiness.hpp"
#include "common/api/endpoint.hpp"
#include "common/api/flow_endpoint.hpp"
#include "common/api/write_fence_watch.hpp"
#include "common/auth/auth_failure_throttle.hpp"
#include "common/auth/token_cache.hpp"
#include "common/db/connection_pool.hpp"
#include "common/flows/flow_registry.hpp"
#include "common/http/dispatch.hpp"
#include "common/web/session_lookup.hpp"
#include "common/web/session_store.hpp"
#include "common/web/signed_in_riders.hpp"

namespace rr::api {

// What an endpoint may be built with; each takes only the collaborators it needs.
struct Collaborators {
  db::ConnectionPool& pool;
  Authenticator& authenticator;
  FlowEndpoint& flows;
  const DatabaseReadiness& readiness;
  const std::atomic<bool>& draining;
  const WriteFenceWatch& write_fence;  // open fences close the write routes
  web::SessionStore& sessions;         // the rider pages'
  web::SessionLookup& session_lookup;  // their cookies' sessions, throttled per address as failed_auth
  web::SignedInRiders& riders;         // the pages' signed-in riders, counted per user as the API's callers
  auth::AuthFailureThrottle& failed_auth;
  auth::TokenCache& tokens;  // proven tokens, which failed_auth never holds back
};

struct Route {
  std::string_view method;
  // As flows::match_path reads it ("/rides/{id}/cancel"); also the route's metric label.
  std::string_view path_template;
  // The last {segment} takes the rest of the path, slashes included and possibly empty, so the
  // endpoint (not the router) refuses a path below it ("/rides/1/x": no such ride).
  bool last_argument_takes_rest = false;
  // Counted against the caller's per-user in-flight limit, which needs the caller's user.
  bool needs_user = false;
  // A write: answered 503 with Retry-After while a write fence is open (common/api/fenced_endpoint.hpp).
  bool fenced = false;
  http::Lane lane = http::Lane::workers;  // where a request goes when the triage cannot answer it
  std::unique_ptr<Endpoint> (*make_endpoint)(const Route& route, const Collaborators& with) = nullptr;
  const flows::RegisteredFlow* flow = nullptr;  // a flow's route: the flow it runs
};

// Every route: the registry's flows first (their templates are more specific), then kEndpoints.
std::span<const Route> all_routes();

// What the table says about a request's method and path.
struct RouteLookup {
  const Route* route = nullptr;  // the route serving this method at this path; null when none does
  std::size_t index = 0;         // route's position in all_routes()
  flows::PathArguments arguments;
  // The first template the path matches, whatever the method (empty: no route's), and, when no
  // route serves this method there, the methods served at it as an Allow header lists them.
  std::string_view path_template;
  std::string allow;
};
RouteLookup find_route(std::string_view method, std::string_view path);

// The answer for a request no route serves: 405 with Allow when its path has a route for another
// method, else 404.
http::Response routing_refusal(const RouteLookup& lookup);

}  // namespace rr::api
