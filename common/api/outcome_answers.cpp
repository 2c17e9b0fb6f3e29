// Outcomes, key states and API errors as HTTP answers.
#include "common/api/outcome_answers.hpp"

#include "common/base/error_body.hpp"
#include "common/base/log.hpp"
#include "common/db/connection_pool.hpp"
#include "common/db/outage.hpp"

namespace rr::api {

http::Response error_response(int status, const std::string& type, const std::string& message,
                              int retry_after_seconds) {
  http::Response response;
  response.status = status;
  response.body = error_body(type, message);
  if (retry_after_seconds > 0) response.with_header("Retry-After", std::to_string(retry_after_seconds));
  if (status == 401) response.with_header("WWW-Authenticate", "Bearer");
  return response;
}

http::Response error_response(const ApiError& error) {
  return error_response(error.status, error.type, error.what(), error.retry_after_seconds);
}

http::Response failure_answer(const std::exception& error, const std::string& request_id) {
  if (const auto* api_error = dynamic_cast<const ApiError*>(&error)) return error_response(*api_error);
  if (dynamic_cast<const db::PoolExhausted*>(&error)) {
    log::warn("database pool exhausted", {{"request_id", request_id}});
    return error_response(503, "api_error", "The service is busy; retry shortly.", 1);
  }
  if (auto outage = db::outage_message(error)) {
    log::warn("database outage", {{"request_id", request_id}, {"error", error.what()}});
    return error_response(503, "api_error", *outage, 2);
  }
  if (auto conflict = db::conflict_message(error)) {
    // A batch of new keys that deadlocked or failed to serialize reaches each of its requests so,
    // with nothing written; a create has no retry loop of its own, and the client's retry is one.
    log::warn("database conflict", {{"request_id", request_id}, {"error", error.what()}});
    return error_response(503, "api_error", *conflict, 1);
  }
  log::error("request failed", {{"request_id", request_id}, {"error", error.what()}});
  return error_response(500, "api_error", "Internal error; retry with the same Idempotency-Key.");
}

http::Response stored_answer(int status, std::string body, bool replayed) {
  http::Response response{status, "application/json", {}, std::move(body)};
  if (replayed) response.with_header("Idempotent-Replayed", "true");
  return response;
}

ApiError error_for(const idempotency::Outcome& outcome) {
  using Kind = idempotency::Outcome::Kind;
  switch (outcome.kind) {
    case Kind::transient:
      if (outcome.retry_reason == idempotency::RetryReason::not_ready) {
        return ApiError(409, "invalid_request_error", outcome.message, std::max(outcome.retry_after_seconds, 1));
      }
      return ApiError(503, "api_error", outcome.message, std::max(outcome.retry_after_seconds, 1));
    case Kind::lock_lost:
      return ApiError(409, "idempotency_error", "This request was taken over by a retry; retry later.", 1);
    case Kind::conflict:
      return ApiError(409, "idempotency_error", outcome.message, std::max(outcome.retry_after_seconds, 1));
    case Kind::finished:  // not an error: answer_for stores it as it is
    case Kind::failed:
      break;
  }
  return ApiError(500, "api_error", "Internal error; retry with the same Idempotency-Key.");
}

http::Response answer_for(idempotency::Outcome outcome) {
  if (outcome.kind == idempotency::Outcome::Kind::finished) {
    return stored_answer(outcome.result.code, std::move(outcome.result.body), false);
  }
  throw error_for(outcome);
}

ApiError key_in_flight() {
  return ApiError(409, "idempotency_error", "A request with this Idempotency-Key is still in progress; retry later.",
                  1);
}

ApiError key_mismatch() {
  return ApiError(422, "idempotency_error",
                  "This Idempotency-Key was used with a different method, path or parameters.");
}

ApiError too_many_in_flight(std::size_t limit) {
  return ApiError(429, "rate_limit_error",
                  "Too many requests in progress for this user (at most " + std::to_string(limit) + "); retry shortly.",
                  1);
}

ApiError too_many_waiting() {
  return ApiError(429, "rate_limit_error",
                  "Too many of this user's requests are waiting for keys in flight; retry shortly.", 1);
}

}  // namespace rr::api
