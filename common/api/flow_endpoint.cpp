// Key acquisition around the runner for every registered flow, and the replay paths.
#include "common/api/flow_endpoint.hpp"

#include <thread>

#include "common/api/bounded_wait.hpp"
#include "common/api/flow_params.hpp"
#include "common/api/outcome_answers.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/auth/tokens.hpp"
#include "common/base/log.hpp"
#include "common/base/random.hpp"
#include "common/fiber/fiber.hpp"
#include "common/http/prefer_header.hpp"
#include "common/idempotency/key_acquisition.hpp"

namespace rr::api {
namespace {

// Every answer about a key names it (already validated printable ASCII), so a client with many
// requests in flight can tell which one an answer belongs to.
template <typename Answer>
auto answer_about_key(const std::string& key, Answer answer) {
  decltype(answer()) response;
  try {
    response = answer();
  } catch (const ApiError& e) {
    response = error_response(e);
  }
  if (response) response->with_header("Idempotency-Key", key);
  return response;
}

// The flow's first phase as one call with the key's creation, when the flow has one.
const idempotency::CreatingCall* creating_call_of(const idempotency::Flow& flow) {
  auto first = flow.find(idempotency::kStarted);
  if (first == flow.end() || !first->second.create_call) return nullptr;
  return &first->second.create_call;
}

// The answer `finished` stored, for a request under the same key: 422 when the request's
// parameters are not the ones that finished.
http::Response replay_of(const idempotency::FinishedResponse& finished, const FlowRequest& request) {
  if (finished.request_fingerprint != request.fingerprint) throw key_mismatch();
  return stored_answer(finished.status, finished.body, true);
}

// Tells the key's waiters in this process when our run of it ends, however it ends (after the
// finished answer is remembered, so their re-runs replay it from memory).
class ReleaseNotice {
 public:
  ReleaseNotice(idempotency::KeyWaiters* waiters, const std::string& key) : waiters_(waiters), key_(key) {}
  ~ReleaseNotice() {
    if (waiters_ && user_id_) waiters_->key_released(*user_id_, key_);
  }
  ReleaseNotice(const ReleaseNotice&) = delete;
  ReleaseNotice& operator=(const ReleaseNotice&) = delete;
  void ran_for(std::int64_t user_id) { user_id_ = user_id; }

 private:
  idempotency::KeyWaiters* waiters_;
  const std::string& key_;
  std::optional<std::int64_t> user_id_;
};

}  // namespace

FlowEndpoint::FlowEndpoint(Dependencies dependencies) : deps_(dependencies) { require_params_readers(); }

FlowRequest::FlowRequest(const http::Request& request, const flows::FoundFlow& found)
    : flow(found.flow),
      token(parse_bearer_token(request)),
      key(parse_idempotency_key(request)),
      path(request.path),
      params_json(read_flow_params(*found.flow, request, found.arguments)),
      fingerprint(idempotency::FinishedResponses::fingerprint(found.flow->method, request.path, params_json)),
      request_bytes(idempotency::FinishedResponses::request_bytes(
          request.method, request.target, request.header("Content-Type").value_or(""), request.body)),
      remote_address(request.remote_address),
      preferred_wait(http::preferred_wait_seconds(request.headers)),
      wait_deadline(request.wait_deadline),
      wait_place(held_wait_place(request)) {}

FlowRequest::FlowRequest(const flows::RegisteredFlow& flow, std::string path, std::string key, std::string params_json,
                         const http::Request& request, std::optional<std::uint64_t> wait_seconds)
    : flow(&flow),
      key(std::move(key)),
      path(std::move(path)),
      params_json(std::move(params_json)),
      fingerprint(idempotency::FinishedResponses::fingerprint(flow.method, this->path, this->params_json)),
      remote_address(request.remote_address),
      preferred_wait(wait_seconds),
      wait_deadline(request.wait_deadline),
      wait_place(held_wait_place(request)) {}

std::optional<http::Response> FlowEndpoint::replay_from_memory(std::int64_t user_id, const FlowRequest& request) {
  auto finished = deps_.finished.find(user_id, request.key);
  if (!finished) return std::nullopt;
  return replay_of(*finished, request);
}

std::optional<http::Response> FlowEndpoint::answer_in_memory(const http::Request& request,
                                                             const flows::FoundFlow& found) {
  std::optional<FlowRequest> flow_request;
  std::shared_ptr<const idempotency::FinishedResponse> finished;
  try {
    // The token's and the key's checks first, in the contract's order, as for any request; then
    // what this process remembers of the key, looked up once for both replays below.
    auto token = parse_bearer_token(request);
    auto key = parse_idempotency_key(request);
    if (auto user = auth::cached_user(deps_.tokens, token)) finished = deps_.finished.find(user->id, key);
    // A retry that sends the very bytes of the request that finished has that request's
    // parameters: neither reading them nor their canonical form is needed.
    if (finished &&
        idempotency::FinishedResponses::same_request_bytes(finished->request_bytes, request.method, request.target,
                                                           request.header("Content-Type").value_or(""), request.body)) {
      return answer_about_key(key, [&]() -> std::optional<http::Response> {
        return stored_answer(finished->status, finished->body, true);
      });
    }
    flow_request.emplace(request, found);
  } catch (const ApiError& e) {
    return error_response(e);  // validation needs no I/O either
  }
  return answer_about_key(flow_request->key, [&]() -> std::optional<http::Response> {
    if (!finished) return std::nullopt;
    return replay_of(*finished, *flow_request);
  });
}

http::Response FlowEndpoint::handle(const http::Request& request, const flows::FoundFlow& found) {
  FlowRequest flow_request(request, found);
  return *answer_about_key(flow_request.key, [&]() -> std::optional<http::Response> {
    // The one request told to renew the token's entry looks it up in run(), with its key.
    return run(flow_request, auth::cached_user_unless_renewing(deps_.tokens, flow_request.token));
  });
}

http::Response FlowEndpoint::run_for_user(const auth::User& user, const flows::RegisteredFlow& flow, std::string path,
                                          std::string key, std::string params_json, const http::Request& request,
                                          std::chrono::seconds wait) {
  FlowRequest flow_request(flow, std::move(path), std::move(key), std::move(params_json), request,
                           static_cast<std::uint64_t>(std::max<std::int64_t>(wait.count(), 0)));
  return *answer_about_key(flow_request.key,
                           [&]() -> std::optional<http::Response> { return run(flow_request, user); });
}

http::Response FlowEndpoint::run(const FlowRequest& request, std::optional<auth::User> user) {
  BoundedWait wait(request.preferred_wait, deps_.max_wait, request.wait_deadline, request.wait_place);
  auto replayed = [&](http::Response response) {
    if (wait.waited()) count_wait("replayed");
    mark_wait_applied(response, wait);
    return response;
  };
  // A replay of a key this process saw finish needs neither a connection nor a round trip.
  if (user) {
    if (auto answer = replay_from_memory(user->id, request)) return replayed(std::move(*answer));
  }

  idempotency::KeyRequest key_request;
  key_request.idempotency_key = request.key;
  key_request.method = std::string(request.flow->method);
  key_request.path = request.path;
  key_request.params_json = request.params_json;
  key_request.origin_ip = request.remote_address;
  // Before a connection is taken: a token the cache does not know is unproven, and an address
  // that failed too often must not cost the database another lookup.
  if (!user && deps_.failed_auth && !auth::cached_user(deps_.tokens, request.token)) {
    if (auto seconds = deps_.failed_auth->retry_after(request.remote_address)) {
      throw ApiError(429, "rate_limit_error", "Too many failed authentications from this address; try again later.",
                     *seconds);
    }
  }

  // Built once the user is known (the provider customer is theirs), before the key: the flow's
  // first phase may create the key itself, in the same round trip.
  std::optional<idempotency::Flow> flow;

  ReleaseNotice release_notice(deps_.waiters, request.key);
  idempotency::Outcome outcome;
  for (int attempt = 0;; ++attempt) {
    idempotency::AcquireResult acquired;
    {
      // One connection checkout for authentication and the key, when the token is not cached. A
      // new key's transaction stays open (with the connection) for the first phase; a creating
      // call that joins a batch of concurrent requests' gives it back while it waits
      // (KeyConnections); otherwise the connection goes back here.
      idempotency::KeyConnections connections{std::nullopt, [this] { return deps_.pool.acquire(); },
                                              &deps_.runner.coalesced_calls()};
      if (!user) {
        auto& conn = connections.held.emplace(deps_.pool.acquire());
        user = fiber::blocking([&] { return auth::authenticate_cached(deps_.tokens, conn, request.token); });
      }
      if (!user) {
        if (deps_.failed_auth) deps_.failed_auth->record_failure(request.remote_address);
        throw ApiError(401, "authentication_error", "The bearer token is not valid.");
      }
      key_request.user_id = user->id;
      if (!flow) flow = request.flow->make_flow({deps_.stripe, user->stripe_customer_id, deps_.enqueuer_wakeup});
      acquired =
          idempotency::begin_key(std::move(connections), key_request, deps_.lock_timeout, creating_call_of(*flow));
    }

    if (auto* replay = std::get_if<idempotency::Replay>(&acquired)) {
      deps_.finished.remember(user->id, request.key,
                              {request.fingerprint, replay->status, replay->body, request.request_bytes});
      return replayed(stored_answer(replay->status, std::move(replay->body), true));
    }
    if (std::holds_alternative<idempotency::InFlight>(acquired)) {
      // The lookup's snapshot can predate a finish in this process (its batch was answered late):
      // the answer is in memory then, and the release that would wake a waiter has already
      // happened, so waiting would hold one of the user's places after the key finished, and a
      // place its woken waiters gave back could let more than the bound wait for one key.
      if (auto answer = replay_from_memory(user->id, request)) return replayed(std::move(*answer));
      if (auto later = wait_for_release(deps_.waiters, wait, user->id, request.key)) return std::move(*later);
      throw key_in_flight();
    }
    if (std::holds_alternative<idempotency::Mismatch>(acquired)) throw key_mismatch();

    auto& locked = std::get<idempotency::Acquired>(acquired);
    release_notice.ran_for(user->id);
    if (wait.waited() && attempt == 0) count_wait("ran");
    // The key's tag is a SHA-256: computed only when debug lines are written (1.9 % of a new key's
    // CPU when it was computed for a line filtered out).
    if (log::enabled(log::Level::debug)) {
      log::debug("idempotency key locked", {{"key", auth::log_tag(request.key)},
                                            {"key_id", locked.key.id},
                                            {"flow", request.flow->name},
                                            {"recovery_point", locked.key.recovery_point},
                                            {"created", locked.created}});
    }
    outcome = deps_.runner.run(*flow, std::move(locked.key), std::move(locked.section), std::move(locked.carried));
    // A serialization failure in the section that created the key took the key with it (the
    // runner cannot retry a section it cannot re-create): nothing is stored, so start over here
    // rather than hand the client a 409 for a conflict it did not cause.
    if (outcome.kind != idempotency::Outcome::Kind::conflict || !locked.created || attempt >= 3) break;
    fiber::sleep_for(jitter(std::chrono::milliseconds(20) * (attempt + 1)));
  }
  if (outcome.kind == idempotency::Outcome::Kind::finished) {
    deps_.finished.remember(user->id, request.key,
                            {request.fingerprint, outcome.result.code, outcome.result.body, request.request_bytes});
  }
  auto answer = answer_for(std::move(outcome));
  mark_wait_applied(answer, wait);
  return answer;
}

}  // namespace rr::api
