// Folding client-sent methods and paths into bounded label sets.
#include "common/api/metric_labels.hpp"

#include "common/flows/flow_registry.hpp"

namespace rr::api {

std::string_view method_label(std::string_view method) {
  for (std::string_view known : {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"}) {
    if (method == known) return known;
  }
  return "other";
}

std::string_view route_label(const http::Request& request) {
  const std::string& path = request.path;
  for (std::string_view known : {"/rides", "/healthz", "/readyz"}) {
    if (path == known) return known;
  }
  // A flow's route by its template (closed set: the registry's entries).
  if (auto found = flows::find_flow_by_path(path); found) return found->flow->path_template;
  if (path.starts_with("/rides/")) return "/rides/{id}";
  return "unmatched";
}

}  // namespace rr::api
