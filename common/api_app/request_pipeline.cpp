// Routing over the route table, the error boundary and the request-id/access-log wrapper.
#include "common/api_app/request_pipeline.hpp"

#include <chrono>
#include <unordered_map>

#include "common/api/fenced_endpoint.hpp"
#include "common/api/outcome_answers.hpp"
#include "common/api_app/metric_labels.hpp"
#include "common/base/log.hpp"
#include "common/base/random.hpp"
#include "common/metrics/registry.hpp"

namespace rr::api {
namespace {

// A client's X-Request-Id is echoed when it is short printable text; otherwise we make one.
std::string request_id_for(const http::Request& request) {
  if (auto given = request.header("X-Request-Id"); given && !given->empty() && given->size() <= 128) {
    bool printable = true;
    for (unsigned char c : *given) printable = printable && c > 0x20 && c < 0x7f;
    if (printable) return std::string(*given);
  }
  return fast_uuid();
}

// The registry builds label text under its lock on every lookup; a request's series repeat, so each
// thread remembers the ones it used (the registry's series live as long as the process). Labels
// come from closed sets (metric_labels.hpp) whose texts are static, so these caches stay small and
// their keys are views: a lookup allocates nothing.
struct SeriesKey {
  std::string_view route;
  std::string_view method;
  int status;
  bool operator==(const SeriesKey&) const = default;
};

struct SeriesKeyHash {
  std::size_t operator()(const SeriesKey& key) const {
    std::size_t hash = std::hash<std::string_view>{}(key.route);
    hash = hash * 31 + std::hash<std::string_view>{}(key.method);
    return hash * 31 + static_cast<std::size_t>(key.status);
  }
};

metrics::Counter& requests_counter(std::string_view route, std::string_view method, int status) {
  thread_local std::unordered_map<SeriesKey, metrics::Counter*, SeriesKeyHash> cache;
  auto& slot = cache[SeriesKey{route, method, status}];
  if (!slot) {
    slot = &metrics::default_registry().counter(
        "rocket_rides_http_requests_total", "HTTP requests by route, method and status.",
        {{"route", std::string(route)}, {"method", std::string(method)}, {"status", std::to_string(status)}});
  }
  return *slot;
}

// The text itself when it fits (no copy), else log::truncated's cut of it, kept in `cut`.
std::string_view bounded(std::string_view text, std::size_t max_bytes, std::string& cut) {
  if (text.size() <= max_bytes) return text;
  cut = log::truncated(text, max_bytes);
  return cut;
}

metrics::Histogram& duration_histogram(std::string_view route) {
  thread_local std::unordered_map<std::string_view, metrics::Histogram*> cache;  // static label texts
  auto& slot = cache[route];
  if (!slot) {
    slot = &metrics::default_registry().histogram("rocket_rides_http_request_duration_seconds",
                                                  "HTTP request duration.", {{"route", std::string(route)}});
  }
  return *slot;
}

}  // namespace

RequestPipeline::RequestPipeline(const Collaborators& with, Authenticator& authenticator, InFlightPerUser& in_flight)
    : authenticator_(authenticator), in_flight_(in_flight) {
  for (const auto& route : all_routes()) {
    auto endpoint = route.make_endpoint(route, with);
    if (route.fenced) endpoint = std::make_unique<FencedEndpoint>(std::move(endpoint), with.write_fence);
    endpoints_.push_back(std::move(endpoint));
  }
}

http::Response RequestPipeline::handle(const http::Request& request) {
  auto started = std::chrono::steady_clock::now();
  std::string request_id = request_id_for(request);
  auto lookup = find_route(request.method, request.path);
  // Held until the answer is ready: the triage's (Request::admission) or one taken here.
  std::shared_ptr<const void> admission = request.admission;
  // Whatever an endpoint or the admission throws is answered by the error boundary, never by a
  // crashed worker.
  http::Response response = within_error_boundary(request_id, [&] {
    std::optional<http::Response> answer;
    if (!admission) answer = answer_without_database(request, lookup, admission);
    if (!answer && !admission && lookup.route && lookup.route->needs_user) {
      // The triage did not know this token's user: look it up (and remember it), then count it.
      auto admitted = admit(authenticator_.user_of(request).id);
      if (auto* refused = std::get_if<http::Response>(&admitted))
        answer = std::move(*refused);
      else
        admission = std::get<std::shared_ptr<const InFlightPerUser::Slot>>(std::move(admitted));
    }
    return answer ? std::move(*answer) : route(request, lookup);
  });
  // Parked until the key it waits for is released, keeping its user's slot (one taken here too):
  // the re-run's answer is the one logged.
  if (response.deferral) {
    if (admission == request.admission) return response;
    return http::keeping_while_parked(std::move(response), std::move(admission));
  }
  if (response.status >= 500 || response.status == 429) name_the_key(request, lookup, response);
  return finish(request, lookup, std::move(response), std::move(request_id), started);
}

// Failures caught here (the database down, the pool exhausted) are answers about the request's
// key too; the flow endpoint already named it on everything else.
void RequestPipeline::name_the_key(const http::Request& request, const RouteLookup& lookup, http::Response& response) {
  if (!lookup.route || response.header("Idempotency-Key")) return;
  if (auto key = endpoints_[lookup.index]->idempotency_key(request)) response.with_header("Idempotency-Key", *key);
}

std::optional<http::Response> RequestPipeline::handle_in_memory(const http::Request& request) {
  auto started = std::chrono::steady_clock::now();
  auto lookup = find_route(request.method, request.path);
  // Not /healthz: the watchdog probes it to prove the worker pool still answers.
  if (!lookup.route || !lookup.route->needs_user) return std::nullopt;
  std::optional<http::Response> response;
  try {
    response = endpoints_[lookup.index]->answer_in_memory(request, lookup.arguments);
  } catch (const std::exception&) {
    return std::nullopt;  // the worker path has the full error boundary
  }
  if (!response) return std::nullopt;
  return finish(request, lookup, std::move(*response), request_id_for(request), started);
}

http::Dispatch RequestPipeline::dispatch(http::Request& request) {
  auto started = std::chrono::steady_clock::now();
  std::shared_ptr<const void> admission;
  std::optional<http::Response> answer;
  RouteLookup lookup;
  try {
    lookup = find_route(request.method, request.path);
    answer = answer_without_database(request, lookup, admission);
  } catch (const std::exception&) {
    return {};  // the worker path has the full error boundary
  }
  if (answer) {
    return {finish(request, lookup, std::move(*answer), request_id_for(request), started), http::Lane::workers};
  }
  // A fiber runs only a request whose user is known here: looking a token up is a blocking query.
  auto lane = lookup.route ? lookup.route->lane : http::Lane::workers;
  if (lane == http::Lane::fibers && !admission) lane = http::Lane::workers;
  request.admission = std::move(admission);
  return {std::nullopt, lane};
}

// The request id, metrics and the access log line, for both paths.
http::Response RequestPipeline::finish(const http::Request& request, const RouteLookup& lookup, http::Response response,
                                       std::string request_id, std::chrono::steady_clock::time_point started) {
  bool replayed = response.header("Idempotent-Replayed").has_value();
  auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
  std::string_view route = route_label(lookup);
  requests_counter(route, method_label(request.method), response.status).inc();
  duration_histogram(route).observe(static_cast<double>(elapsed.count()) / 1e6);
  auto& registry = metrics::default_registry();
  if (replayed) {
    static auto& replays = registry.counter("rocket_rides_replays_total", "Responses replayed from a finished key.");
    replays.inc();
  }
  if (response.status == 409) {
    static auto& conflicts =
        registry.counter("rocket_rides_conflicts_total", "409 answers: a key in flight or a persistent conflict.");
    conflicts.inc();
  }
  // Method and path are whatever the client sent (Beast bounds only the whole head): cut, so one
  // request cannot write a line of 16 KiB.
  constexpr std::size_t kLoggedMethodBytes = 64, kLoggedPathBytes = 512;
  std::string method_cut, path_cut;
  log::info("request", {{"request_id", request_id},
                        {"method", bounded(request.method, kLoggedMethodBytes, method_cut)},
                        {"path", bounded(request.path, kLoggedPathBytes, path_cut)},
                        {"status", response.status},
                        {"duration_ms", static_cast<double>(elapsed.count()) / 1000.0},
                        {"replayed", replayed},
                        {"remote", request.remote_address}});
  response.with_header("X-Request-Id", std::move(request_id));
  return response;
}

http::Response RequestPipeline::route(const http::Request& request, const RouteLookup& lookup) {
  if (!lookup.route) return routing_refusal(lookup);
  return endpoints_[lookup.index]->handle(request, lookup.arguments);
}

}  // namespace rr::api
