// The registered flows and path-template matching.
#include "common/flows/flow_registry.hpp"

#include <array>

#include "common/rides/cancel_flow.hpp"
#include "common/rides/ride_flow.hpp"

namespace rr::flows {
namespace {

// One line per endpoint that runs as a flow.
const std::array kFlows{
    RegisteredFlow{"create_ride", "POST", "/rides", rides::make_ride_flow},
    RegisteredFlow{"cancel_ride", "POST", "/rides/{id}/cancel", rides::make_cancel_flow},
};

// The next segment of `path` after `at` (which points at a '/'), or nothing at the end.
std::optional<std::string_view> next_segment(std::string_view path, std::size_t& at) {
  if (at >= path.size() || path[at] != '/') return std::nullopt;
  auto end = path.find('/', at + 1);
  if (end == std::string_view::npos) end = path.size();
  auto segment = path.substr(at + 1, end - at - 1);
  at = end;
  return segment;
}

}  // namespace

std::span<const RegisteredFlow> all_flows() { return kFlows; }

std::optional<PathArguments> match_path(std::string_view path_template, std::string_view path) {
  PathArguments arguments;
  std::size_t t = 0, p = 0;
  while (t < path_template.size()) {
    auto wanted = next_segment(path_template, t);
    auto given = next_segment(path, p);
    if (!wanted || !given) return std::nullopt;
    if (wanted->starts_with('{') && wanted->ends_with('}')) {
      if (given->empty()) return std::nullopt;
      arguments.emplace_back(*given);
    } else if (*wanted != *given) {
      return std::nullopt;
    }
  }
  if (p != path.size()) return std::nullopt;
  return arguments;
}

std::optional<FoundFlow> find_flow_by_path(std::string_view path) {
  for (const auto& flow : kFlows) {
    if (auto arguments = match_path(flow.path_template, path)) return FoundFlow{&flow, std::move(*arguments)};
  }
  return std::nullopt;
}

std::optional<FoundFlow> find_flow(std::string_view method, std::string_view path) {
  auto found = find_flow_by_path(path);
  if (!found || found->flow->method != method) return std::nullopt;
  return found;
}

}  // namespace rr::flows
