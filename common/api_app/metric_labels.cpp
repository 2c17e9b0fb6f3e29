// Folding client-sent methods and paths into bounded label sets.
#include "common/api_app/metric_labels.hpp"

#include "common/api_app/routes.hpp"

namespace rr::api {

std::string_view method_label(std::string_view method) {
  for (std::string_view known : {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"}) {
    if (method == known) return known;
  }
  return "other";
}

std::string_view route_label(const RouteLookup& lookup) {
  // A template of the route table: a closed set.
  return lookup.path_template.empty() ? std::string_view("unmatched") : lookup.path_template;
}

std::string_view route_label(const http::Request& request) {
  return route_label(find_route(request.method, request.path));
}

}  // namespace rr::api
