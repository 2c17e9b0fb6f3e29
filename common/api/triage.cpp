// What the API answers without a database, and the per-user in-flight limit. Runs on the I/O
// thread (App::dispatch) and again on a worker for a request whose user was not yet known there,
// so both paths give the same answers in the same order: 404, 405, health, 401 for a missing or
// malformed token, validation errors, replays from memory, then 429 for a user at the limit.
#include "common/api/api_error.hpp"
#include "common/api/app.hpp"
#include "common/api/page_query.hpp"
#include "common/api/request_parsing.hpp"
#include "common/auth/token_cache.hpp"
#include "common/auth/tokens.hpp"
#include "common/flows/flow_registry.hpp"

namespace rr::api {
namespace {

// The methods each route serves, as its Allow header lists them; nothing for an unknown path.
// Mirrors App::route.
std::optional<std::string_view> allowed_methods(const std::string& path) {
  if (path == "/rides") return "GET, POST";
  if (auto found = flows::find_flow_by_path(path)) return found->flow->method;
  if (path.starts_with("/rides/")) return "GET";
  if (path == "/healthz" || path == "/readyz") return "GET";
  return std::nullopt;
}

// A token that cannot be one of ours is refused without looking it up, as the lookup would.
void require_token_form(const http::Request& request) {
  if (!auth::looks_like_token(parse_bearer_token(request))) {
    throw ApiError(401, "authentication_error", "The bearer token is not valid.");
  }
}

bool allows(std::string_view allow, const std::string& method) {
  return allow == "GET, POST" ? method == "GET" || method == "POST" : method == allow;
}

}  // namespace

bool needs_user(const http::Request& request) {
  if (flows::find_flow(request.method, request.path)) return true;
  if (request.path == "/rides") return request.method == "GET";
  return request.path.starts_with("/rides/") && request.method == "GET";
}

std::variant<std::shared_ptr<const InFlightPerUser::Slot>, http::Response> App::admit(std::int64_t user_id) {
  if (auto slot = in_flight_.try_acquire(user_id)) return slot;
  return error_response(429, "rate_limit_error",
                        "Too many requests in progress for this user (at most " + std::to_string(in_flight_.limit()) +
                            "); retry shortly.",
                        1);
}

std::optional<http::Response> App::answer_without_database(const http::Request& request,
                                                           std::shared_ptr<const void>& admission) {
  auto allow = allowed_methods(request.path);
  if (!allow) return error_response(404, "invalid_request_error", "No such route.");
  if (!allows(*allow, request.method)) {
    auto response = error_response(405, "invalid_request_error", "Method not allowed.");
    response.with_header("Allow", std::string(*allow));
    return response;
  }
  // Liveness of the process; the watchdog proves the workers separately (api/serve.cpp).
  if (request.path == "/healthz") return http::Response{200, "application/json", {}, "{\"status\":\"ok\"}"};
  if (!needs_user(request)) return std::nullopt;

  std::optional<std::string> key;  // a flow's request: every answer about a key names it
  try {
    if (auto found = flows::find_flow(request.method, request.path)) {
      // Validation (401 for the token's form, 400 for the key, the flow's parameter errors) and
      // replays of keys this process saw finish.
      if (auto answer = flows_.answer_in_memory(request, *found)) return answer;
      key = parse_idempotency_key(request);
      require_token_form(request);
    } else {
      require_token_form(request);
      if (request.path == "/rides") {
        parse_page_query(request);
      } else {
        parse_ride_id(std::string_view(request.path).substr(7));
      }
    }
  } catch (const ApiError& e) {
    auto response = error_response(e);
    if (key) response.with_header("Idempotency-Key", *key);
    return response;
  }

  // Counted against its user only once the token is known: a token the cache does not hold is
  // looked up (and counted) on a worker.
  auto user = auth::cached_user(tokens_, parse_bearer_token(request));
  if (!user) return std::nullopt;
  auto admitted = admit(user->id);
  if (auto* refused = std::get_if<http::Response>(&admitted)) {
    if (key) refused->with_header("Idempotency-Key", *key);
    return std::move(*refused);
  }
  admission = std::get<std::shared_ptr<const InFlightPerUser::Slot>>(std::move(admitted));
  return std::nullopt;
}

}  // namespace rr::api
