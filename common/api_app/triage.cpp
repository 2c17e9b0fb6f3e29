// What the API answers without a database, and the per-user in-flight limit. Runs on the I/O
// thread (RequestPipeline::dispatch) and again on a worker for a request whose user was not yet known there,
// so both paths give the same answers in the same order: 404, 405 (from the route table), the
// endpoint's answers from memory (health, validation errors, replays), 401 for a malformed token,
// then 429 for a user at the limit.
#include "common/api/outcome_answers.hpp"
#include "common/api_app/request_pipeline.hpp"
#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"

namespace rr::api {

std::variant<std::shared_ptr<const InFlightPerUser::Slot>, http::Response> RequestPipeline::admit(
    std::int64_t user_id) {
  if (auto slot = in_flight_.try_acquire(user_id)) return slot;
  return error_response(too_many_in_flight(in_flight_.limit()));
}

std::optional<http::Response> RequestPipeline::answer_without_database(const http::Request& request,
                                                                       const RouteLookup& lookup,
                                                                       std::shared_ptr<const void>& admission) {
  if (!lookup.route) return routing_refusal(lookup);
  Endpoint& endpoint = *endpoints_[lookup.index];
  try {
    if (auto answer = endpoint.answer_in_memory(request, lookup.arguments)) return answer;
    if (!lookup.route->needs_user) return std::nullopt;
    require_token_form(request);
  } catch (const ApiError& e) {
    auto response = error_response(e);
    name_the_key(request, lookup, response);
    return response;
  }

  // Counted against its user only once the token is known: a token the cache does not hold is
  // looked up (and counted) on a worker.
  auto user = authenticator_.cached_user_of(request);
  if (!user) return std::nullopt;
  auto admitted = admit(user->id);
  if (auto* refused = std::get_if<http::Response>(&admitted)) {
    name_the_key(request, lookup, *refused);
    return std::move(*refused);
  }
  admission = std::get<std::shared_ptr<const InFlightPerUser::Slot>>(std::move(admitted));
  return std::nullopt;
}

}  // namespace rr::api
