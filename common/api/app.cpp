// Routing, the request-id/access-log wrapper and the one place where errors become statuses.
#include "common/api/app.hpp"

#include <chrono>
#include <unordered_map>

#include "common/api/api_error.hpp"
#include "common/api/metric_labels.hpp"
#include "common/api/request_parsing.hpp"
#include "common/base/log.hpp"
#include "common/base/random.hpp"
#include "common/db/outage.hpp"
#include "common/db/transaction.hpp"
#include "common/metrics/registry.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::api {
namespace {

// /readyz: the database is pinged once a second on a connection of its own, and counts as
// reachable for three seconds after a successful ping (HAProxy checks every 500 ms; fall 2).
constexpr std::chrono::milliseconds kReadinessPingInterval{1000};
constexpr std::chrono::milliseconds kReadinessStaleAfter{3000};

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
// come from closed sets (metric_labels.hpp), so these caches stay small.
metrics::Counter& requests_counter(std::string_view route, std::string_view method, int status) {
  thread_local std::unordered_map<std::string, metrics::Counter*> cache;
  std::string status_text = std::to_string(status);
  std::string key = std::string(route) + ' ' + std::string(method) + ' ' + status_text;
  auto& slot = cache[key];
  if (!slot) {
    slot = &metrics::default_registry().counter(
        "rocket_rides_http_requests_total", "HTTP requests by route, method and status.",
        {{"route", std::string(route)}, {"method", std::string(method)}, {"status", status_text}});
  }
  return *slot;
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

App::App(const ApiSettings& settings, idempotency::RunnerOptions runner_options)
    : settings_(settings),
      pool_(settings.database.url, settings.database.session, settings.database_pool_size, std::chrono::seconds(5)),
      stripe_(settings.payment),
      tokens_(10000, settings.token_cache_ttl),
      finished_(settings.response_cache_size, settings.response_cache_ttl),
      runner_(pool_, std::move(runner_options)),
      flows_({pool_, tokens_, finished_, runner_, stripe_, settings.workflow.lock_timeout}),
      in_flight_(settings.max_in_flight_per_user),
      readiness_(settings.database.url, kReadinessPingInterval, kReadinessStaleAfter) {}

http::Response App::handle(const http::Request& request) {
  auto started = std::chrono::steady_clock::now();
  std::string request_id = request_id_for(request);
  http::Response response;
  try {
    // Held until the answer is ready: the triage's (Request::admission) or one taken here.
    std::shared_ptr<const void> admission = request.admission;
    std::optional<http::Response> answer;
    if (!admission) answer = answer_without_database(request, admission);
    if (!answer && !admission && needs_user(request)) {
      // The triage did not know this token's user: look it up (and remember it), then count it.
      auto admitted = admit(authenticate(request).id);
      if (auto* refused = std::get_if<http::Response>(&admitted))
        answer = std::move(*refused);
      else
        admission = std::get<std::shared_ptr<const InFlightPerUser::Slot>>(std::move(admitted));
    }
    response = answer ? std::move(*answer) : route(request);
  } catch (const ApiError& e) {
    response = error_response(e);
  } catch (const db::PoolExhausted& e) {
    log::warn("database pool exhausted", {{"request_id", request_id}});
    response = error_response(503, "api_error", "The service is busy; retry shortly.", 1);
  } catch (const std::exception& e) {
    if (auto outage = db::outage_message(e)) {
      log::warn("database outage", {{"request_id", request_id}, {"error", e.what()}});
      response = error_response(503, "api_error", *outage, 2);
    } else {
      log::error("request failed", {{"request_id", request_id}, {"error", e.what()}});
      response = error_response(500, "api_error", "Internal error; retry with the same Idempotency-Key.");
    }
  }
  if (response.status >= 500 || response.status == 429) name_the_key(request, response);
  return finish(request, std::move(response), request_id, started);
}

// Failures caught here (the database down, the pool exhausted) are answers about the request's
// key too; the flow endpoint already named it on everything else.
void App::name_the_key(const http::Request& request, http::Response& response) {
  if (!flows::find_flow(request.method, request.path) || response.header("Idempotency-Key")) return;
  try {
    response.with_header("Idempotency-Key", parse_idempotency_key(request));
  } catch (const ApiError&) {
    // No valid key: nothing to name.
  }
}

std::optional<http::Response> App::handle_in_memory(const http::Request& request) {
  auto started = std::chrono::steady_clock::now();
  std::optional<http::Response> response;
  try {
    // Not /healthz: the watchdog probes it to prove the worker pool still answers.
    if (auto found = flows::find_flow(request.method, request.path))
      response = flows_.answer_in_memory(request, *found);
  } catch (const std::exception&) {
    return std::nullopt;  // the worker path has the full error boundary
  }
  if (!response) return std::nullopt;
  return finish(request, std::move(*response), request_id_for(request), started);
}

http::Dispatch App::dispatch(http::Request& request) {
  auto started = std::chrono::steady_clock::now();
  std::shared_ptr<const void> admission;
  std::optional<http::Response> answer;
  try {
    answer = answer_without_database(request, admission);
  } catch (const std::exception&) {
    return {};  // the worker path has the full error boundary
  }
  if (answer) return {finish(request, std::move(*answer), request_id_for(request), started), http::Lane::workers};
  request.admission = std::move(admission);
  // Readiness runs one short query; on its own lane it never waits behind requests.
  if (request.path == "/readyz") return {std::nullopt, http::Lane::control};
  return {};
}

// The request id, metrics and the access log line, for both paths.
http::Response App::finish(const http::Request& request, http::Response response, const std::string& request_id,
                           std::chrono::steady_clock::time_point started) {
  response.with_header("X-Request-Id", request_id);
  bool replayed = response.header("Idempotent-Replayed").has_value();
  auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
  std::string_view route = route_label(request);
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
  log::info("request", {{"request_id", request_id},
                        {"method", log::truncated(request.method, kLoggedMethodBytes)},
                        {"path", log::truncated(request.path, kLoggedPathBytes)},
                        {"status", response.status},
                        {"duration_ms", static_cast<double>(elapsed.count()) / 1000.0},
                        {"replayed", replayed},
                        {"remote", request.remote_address}});
  return response;
}

http::Response App::route(const http::Request& request) {
  const std::string& path = request.path;
  auto method_not_allowed = [](const char* allow) {
    auto response = error_response(405, "invalid_request_error", "Method not allowed.");
    response.with_header("Allow", allow);
    return response;
  };
  if (auto found = flows::find_flow(request.method, path)) return flows_.handle(request, *found);
  if (path == "/rides") {
    if (request.method == "GET") return list_rides(request);
    return method_not_allowed("GET, POST");
  }
  if (auto found = flows::find_flow_by_path(path)) return method_not_allowed(found->flow->method.data());
  if (path.starts_with("/rides/")) {
    if (request.method != "GET") return method_not_allowed("GET");
    return get_ride(request, std::string_view(path).substr(7));
  }
  if (path == "/healthz") {
    if (request.method != "GET") return method_not_allowed("GET");
    return http::Response{200, "application/json", {}, "{\"status\":\"ok\"}"};
  }
  if (path == "/readyz") {
    if (request.method != "GET") return method_not_allowed("GET");
    return ready();
  }
  return error_response(404, "invalid_request_error", "No such route.");
}

auth::User App::authenticate(const http::Request& request) {
  std::string token = parse_bearer_token(request);
  // A user the cache knows needs no connection.
  if (auto user = auth::cached_user(tokens_, token)) return *user;
  auto conn = pool_.acquire();
  auto user = auth::authenticate_cached(tokens_, conn, token);
  if (!user) throw ApiError(401, "authentication_error", "The bearer token is not valid.");
  return *user;
}

http::Response App::ready() {
  if (draining_) return error_response(503, "api_error", "Not ready: the server is shutting down.");
  // Not the request pool's state: a busy API still serves, and a balancer that took every busy
  // API out of rotation would turn overload into an outage.
  if (!readiness_.database_reachable()) return error_response(503, "api_error", "Not ready: database unavailable.");
  return http::Response{200, "application/json", {}, "{\"status\":\"ready\"}"};
}

http::Response App::metrics_page() {
  // Gauges of this App's own pool are rendered here rather than registered, so they never
  // outlive it.
  auto stats = pool_.stats();
  std::string body = metrics::default_registry().render();
  body += "# HELP rocket_rides_db_pool_connections Database connections by state.\n";
  body += "# TYPE rocket_rides_db_pool_connections gauge\n";
  body += "rocket_rides_db_pool_connections{state=\"in_use\"} " + std::to_string(stats.in_use) + "\n";
  body += "rocket_rides_db_pool_connections{state=\"idle\"} " + std::to_string(stats.idle) + "\n";
  body += "rocket_rides_db_pool_connections{state=\"max\"} " + std::to_string(stats.size) + "\n";
  body += "# HELP rocket_rides_db_pool_waiting Requests waiting for a database connection.\n";
  body += "# TYPE rocket_rides_db_pool_waiting gauge\n";
  body += "rocket_rides_db_pool_waiting " + std::to_string(stats.waiting) + "\n";
  body +=
      "# HELP rocket_rides_serialization_retries_total Transactions retried after a serialization failure or "
      "deadlock.\n";
  body += "# TYPE rocket_rides_serialization_retries_total counter\n";
  body += "rocket_rides_serialization_retries_total " + std::to_string(runner_.serialization_retries()) + "\n";
  return http::Response{200, "text/plain; version=0.0.4", {}, body};
}

}  // namespace rr::api
