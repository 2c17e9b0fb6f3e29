// The one place where what happened to a request becomes an HTTP answer: a runner outcome, a key
// that could not be taken, or an ApiError thrown anywhere in request handling turns into a status,
// an error type, Retry-After and a JSON body here and nowhere else.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "common/api_requests/api_error.hpp"
#include "common/http/message.hpp"
#include "common/idempotency/phase_runner.hpp"

namespace rr::api {

// The JSON error answer ({"error":{"type":..,"message":..}}), with Retry-After when positive and
// WWW-Authenticate on a 401.
http::Response error_response(int status, const std::string& type, const std::string& message,
                              int retry_after_seconds = 0);
http::Response error_response(const ApiError& error);

// The error boundary's answer for anything thrown while handling a request: an ApiError as it
// says, an exhausted pool or a database outage (db::outage_message) a 503 with Retry-After, and
// only what is left a 500. Logged with the request id.
http::Response failure_answer(const std::exception& error, const std::string& request_id);
// The error boundary around an endpoint: what `handle` answers, or failure_answer for whatever it
// throws.
template <typename Handle>
http::Response within_error_boundary(const std::string& request_id, Handle&& handle) {
  try {
    return std::forward<Handle>(handle)();
  } catch (const std::exception& e) {
    return failure_answer(e, request_id);
  }
}

// A stored final result, fresh or replayed (Idempotent-Replayed: true), byte for byte.
http::Response stored_answer(int status, std::string body, bool replayed);

// What the runner's outcome means for the client. A finished outcome is the stored answer; every
// other kind is an ApiError (thrown by the caller, so the key is named on it like on any error).
http::Response answer_for(idempotency::Outcome outcome);
ApiError error_for(const idempotency::Outcome& outcome);

// The key is held by a request still in progress (409), or was used for another request (422).
ApiError key_in_flight();
ApiError key_mismatch();
// The user has `limit` requests in progress already (API_MAX_IN_FLIGHT_PER_USER): 429.
ApiError too_many_in_flight(std::size_t limit);
// The user holds IDEMPOTENCY_MAX_WAITERS_PER_USER waits for keys in flight already: 429.
ApiError too_many_waiting();

}  // namespace rr::api
