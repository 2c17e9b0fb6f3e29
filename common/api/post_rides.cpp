// POST /rides: validate everything, take the key, and let the phase runner drive the ride flow.
#include "common/api/api_error.hpp"
#include "common/api/app.hpp"
#include "common/api/request_parsing.hpp"
#include "common/auth/tokens.hpp"
#include "common/base/log.hpp"
#include "common/idempotency/key_acquisition.hpp"
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_params.hpp"

namespace rr::api {

http::Response App::post_rides(const http::Request& request) {
  // Validation order follows the contract: 401, then 400 for the key, then 422 for parameters;
  // none of them writes a row.
  std::string token = parse_bearer_token(request);
  std::string key = parse_idempotency_key(request);
  auto params = parse_ride_params(request);

  idempotency::KeyRequest key_request;
  key_request.idempotency_key = key;
  key_request.method = "POST";
  key_request.path = "/rides";
  key_request.params_json = rides::to_json(params);
  key_request.origin_ip = request.remote_address;

  std::optional<auth::User> user;
  idempotency::AcquireResult acquired;
  {
    // One connection checkout for authentication and the key; released before any phase runs.
    auto conn = pool_.acquire();
    user = auth::authenticate_cached(tokens_, conn, token);
    if (!user) throw ApiError(401, "authentication_error", "The bearer token is not valid.");
    key_request.user_id = user->id;
    acquired = idempotency::acquire_key(conn, key_request, settings_.workflow.lock_timeout);
  }

  if (auto* replay = std::get_if<idempotency::Replay>(&acquired)) {
    http::Response response{replay->status, "application/json", {}, replay->body};
    response.with_header("Idempotent-Replayed", "true");
    return response;
  }
  if (std::holds_alternative<idempotency::InFlight>(acquired)) {
    throw ApiError(409, "idempotency_error", "A request with this Idempotency-Key is still in progress; retry later.",
                   1);
  }
  if (std::holds_alternative<idempotency::Mismatch>(acquired)) {
    throw ApiError(422, "idempotency_error",
                   "This Idempotency-Key was used with a different method, path or parameters.");
  }

  auto& locked = std::get<idempotency::Acquired>(acquired);
  log::debug("idempotency key locked", {{"key", auth::log_tag(key)},
                                        {"key_id", locked.key.id},
                                        {"recovery_point", locked.key.recovery_point},
                                        {"created", locked.created}});
  rides::RideRun run{stripe_, user->stripe_customer_id};
  auto flow = rides::make_ride_flow(run);
  auto outcome = runner_.run(flow, std::move(locked.key));
  switch (outcome.kind) {
    case idempotency::Outcome::Kind::finished:
      return http::Response{outcome.status, "application/json", {}, outcome.body};
    case idempotency::Outcome::Kind::transient:
      throw ApiError(outcome.status, outcome.error_type, outcome.message, outcome.retry_after_seconds);
    case idempotency::Outcome::Kind::lock_lost:
      throw ApiError(409, "idempotency_error", "This request was taken over by a retry; retry later.", 1);
    case idempotency::Outcome::Kind::conflict:
      throw ApiError(409, outcome.error_type, outcome.message, outcome.retry_after_seconds);
    case idempotency::Outcome::Kind::failed:
      break;
  }
  throw ApiError(500, "api_error", "Internal error; retry with the same Idempotency-Key.");
}

}  // namespace rr::api
