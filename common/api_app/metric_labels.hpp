// Label values for the API's request metrics. Every value comes from a closed set, never from
// the client's text: each distinct value is a series kept for the life of the process, so a
// client-chosen value (a random method, an id in a path) would grow memory and /metrics without
// bound.
#pragma once

#include <string>
#include <string_view>

#include "common/api_app/routes.hpp"
#include "common/http/message.hpp"

namespace rr::api {

// The standard methods (RFC 9110, plus PATCH) as sent, case-sensitively; anything else "other".
std::string_view method_label(std::string_view method);
// The route a request's path matched, whatever its method: a template of the route table
// ("/rides", "/rides/{id}", "/rides/{id}/cancel", "/healthz", "/readyz"); anything else "unmatched".
std::string_view route_label(const RouteLookup& lookup);
std::string_view route_label(const http::Request& request);

}  // namespace rr::api
