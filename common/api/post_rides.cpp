// POST /rides: validate everything, take the key, and let the phase runner drive the ride flow.
// A replay of a key this process saw finish is answered from memory, on the I/O thread.
#include <thread>

#include "common/api/api_error.hpp"
#include "common/api/app.hpp"
#include "common/api/request_parsing.hpp"
#include "common/auth/tokens.hpp"
#include "common/base/log.hpp"
#include "common/base/random.hpp"
#include "common/idempotency/key_acquisition.hpp"
#include "common/rides/ride_flow.hpp"

namespace rr::api {
namespace {

constexpr const char* kMethod = "POST";
constexpr const char* kPath = "/rides";

http::Response replayed(int status, std::string body) {
  http::Response response{status, "application/json", {}, std::move(body)};
  response.with_header("Idempotent-Replayed", "true");
  return response;
}

ApiError mismatch() {
  return ApiError(422, "idempotency_error",
                  "This Idempotency-Key was used with a different method, path or parameters.");
}

// Every answer about a key names it (already validated printable ASCII), so a client with many
// requests in flight can tell which one an answer belongs to.
template <typename Answer>
auto answer_about_key(const std::string& key, Answer answer) {
  decltype(answer()) response;
  try {
    response = answer();
  } catch (const ApiError& e) {
    response = error_response(e.status, e.type, e.what(), e.retry_after_seconds);
  }
  if (response) response->with_header("Idempotency-Key", key);
  return response;
}

}  // namespace

// Validation order follows the contract: 401, then 400 for the key, then 422 for parameters; none
// of them writes a row.
struct App::RideRequest {
  explicit RideRequest(const http::Request& request)
      : token(parse_bearer_token(request)),
        key(parse_idempotency_key(request)),
        params_json(rides::to_json(parse_ride_params(request))),
        fingerprint(idempotency::FinishedResponses::fingerprint(kMethod, kPath, params_json)),
        remote_address(request.remote_address) {}
  std::string token;
  std::string key;
  std::string params_json;  // canonical: equal values give equal text
  std::string fingerprint;
  std::string remote_address;
};

std::optional<http::Response> App::replay_from_memory(std::int64_t user_id, const std::string& key,
                                                      const std::string& fingerprint) {
  auto finished = finished_.find(user_id, key);
  if (!finished) return std::nullopt;
  if (finished->request_fingerprint != fingerprint) throw mismatch();
  return replayed(finished->status, std::move(finished->body));
}

std::optional<http::Response> App::post_rides_in_memory(const http::Request& request) {
  std::optional<RideRequest> ride;
  try {
    ride.emplace(request);
  } catch (const ApiError& e) {
    // Validation needs no I/O either.
    return error_response(e.status, e.type, e.what(), e.retry_after_seconds);
  }
  return answer_about_key(ride->key, [&]() -> std::optional<http::Response> {
    auto user = auth::cached_user(tokens_, ride->token);
    if (!user) return std::nullopt;
    return replay_from_memory(user->id, ride->key, ride->fingerprint);
  });
}

http::Response App::post_rides(const http::Request& request) {
  RideRequest ride(request);
  return *answer_about_key(ride.key, [&]() -> std::optional<http::Response> { return post_ride(ride); });
}

http::Response App::post_ride(const RideRequest& ride) {
  // A replay of a key this process saw finish needs neither a connection nor a round trip.
  std::optional<auth::User> user = auth::cached_user(tokens_, ride.token);
  if (user) {
    if (auto answer = replay_from_memory(user->id, ride.key, ride.fingerprint)) return std::move(*answer);
  }

  idempotency::KeyRequest key_request;
  key_request.idempotency_key = ride.key;
  key_request.method = kMethod;
  key_request.path = kPath;
  key_request.params_json = ride.params_json;
  key_request.origin_ip = ride.remote_address;

  rides::RideRun run{stripe_, std::string()};
  auto flow = rides::make_ride_flow(run);
  idempotency::Outcome outcome;
  for (int attempt = 0;; ++attempt) {
    idempotency::AcquireResult acquired;
    {
      // One connection checkout for authentication and the key. A new key's transaction stays
      // open (with the connection) for the first phase; otherwise the connection goes back here.
      auto conn = pool_.acquire();
      if (!user) user = auth::authenticate_cached(tokens_, conn, ride.token);
      if (!user) throw ApiError(401, "authentication_error", "The bearer token is not valid.");
      key_request.user_id = user->id;
      acquired = idempotency::begin_key(std::move(conn), key_request, settings_.workflow.lock_timeout);
    }

    if (auto* replay = std::get_if<idempotency::Replay>(&acquired)) {
      finished_.remember(user->id, ride.key, {ride.fingerprint, replay->status, replay->body});
      return replayed(replay->status, std::move(replay->body));
    }
    if (std::holds_alternative<idempotency::InFlight>(acquired)) {
      throw ApiError(409, "idempotency_error", "A request with this Idempotency-Key is still in progress; retry later.",
                     1);
    }
    if (std::holds_alternative<idempotency::Mismatch>(acquired)) throw mismatch();

    auto& locked = std::get<idempotency::Acquired>(acquired);
    log::debug("idempotency key locked", {{"key", auth::log_tag(ride.key)},
                                          {"key_id", locked.key.id},
                                          {"recovery_point", locked.key.recovery_point},
                                          {"created", locked.created}});
    run.stripe_customer_id = user->stripe_customer_id;
    outcome = runner_.run(flow, std::move(locked.key), std::move(locked.section));
    // A serialization failure in the section that created the key took the key with it (the
    // runner cannot retry a section it cannot re-create): nothing is stored, so start over here
    // rather than hand the client a 409 for a conflict it did not cause.
    if (outcome.kind != idempotency::Outcome::Kind::conflict || !locked.created || attempt >= 3) break;
    std::this_thread::sleep_for(jitter(std::chrono::milliseconds(20) * (attempt + 1)));
  }
  switch (outcome.kind) {
    case idempotency::Outcome::Kind::finished:
      finished_.remember(user->id, ride.key, {ride.fingerprint, outcome.status, outcome.body});
      return http::Response{outcome.status, "application/json", {}, std::move(outcome.body)};
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
