// Every endpoint that runs as a registered flow (POST /rides, POST /rides/{id}/cancel): validate
// the request in the contract's order, take its key and let the phase runner drive the flow the
// registry names. A replay of a key this process saw finish is answered from memory, on the I/O
// thread. Knows no endpoint by name: the registry (common/flows/flow_registry.hpp) does.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/auth/auth_failure_throttle.hpp"
#include "common/auth/token_cache.hpp"
#include "common/auth/users.hpp"
#include "common/db/connection_pool.hpp"
#include "common/flows/flow_registry.hpp"
#include "common/http/message.hpp"
#include "common/idempotency/finished_responses.hpp"
#include "common/idempotency/key_waiters.hpp"
#include "common/idempotency/phase_runner.hpp"
#include "common/jobs/enqueuer_wakeup.hpp"
#include "common/payments/stripe_client.hpp"

namespace rr::api {

// A request for a registered flow, validated: 401 for the token's form, then 400 for the key,
// then the flow's own parameter errors; none of them writes a row.
struct FlowRequest {
  FlowRequest(const http::Request& request, const flows::FoundFlow& found);
  // A request whose parameters and user are known already (run_for_user).
  FlowRequest(const flows::RegisteredFlow& flow, std::string path, std::string key, std::string params_json,
              const http::Request& request, std::optional<std::uint64_t> wait_seconds);
  const flows::RegisteredFlow* flow;
  std::string token;  // empty for run_for_user
  std::string key;
  std::string path;
  std::string params_json;  // canonical: equal values give equal text
  std::string fingerprint;
  std::string request_bytes;  // FinishedResponses::request_bytes; empty for run_for_user
  std::string remote_address;
  std::optional<std::uint64_t> preferred_wait;                         // Prefer: wait=N, seconds (before the cap)
  std::optional<std::chrono::steady_clock::time_point> wait_deadline;  // Request::wait_deadline
  // The waiter's place an earlier wait of this request took (Request::wait_place), or null.
  std::shared_ptr<const idempotency::KeyWaiters::Place> wait_place;
};

class FlowEndpoint {
 public:
  struct Dependencies {
    db::ConnectionPool& pool;
    auth::TokenCache& tokens;
    idempotency::FinishedResponses& finished;
    idempotency::PhaseRunner& runner;
    const payments::StripeClient& stripe;
    std::chrono::milliseconds lock_timeout;
    jobs::EnqueuerWakeup* enqueuer_wakeup;  // null: off (ENQUEUER_WAKEUP_DEBOUNCE=0)
    // Where a request for a key in flight waits (Prefer: wait=N), at most max_wait
    // (IDEMPOTENCY_MAX_WAIT); null or 0: never, 409 at once.
    idempotency::KeyWaiters* waiters = nullptr;
    std::chrono::seconds max_wait{0};
    // Failed authentication per address (AUTH_FAILURES_PER_MINUTE); null: unbounded.
    auth::AuthFailureThrottle* failed_auth = nullptr;
  };
  // Throws std::logic_error if a registered flow has no parameter reader (flow_params.hpp).
  explicit FlowEndpoint(Dependencies dependencies);

  // A validation error or a replay from memory, named with the request's key; nothing when the
  // request needs the database. Never blocks.
  std::optional<http::Response> answer_in_memory(const http::Request& request, const flows::FoundFlow& found);
  // The whole request; throws ApiError (named with the key) for what the client must be told.
  // With Prefer: wait=N and the key in flight, the answer may be a deferral (Response::deferral):
  // the server parks the request and runs it again (Request::wait_deadline set) when the key is
  // released or the wait is over; the re-run answers a replay with Preference-Applied: wait=M, or
  // runs the key itself if it was let go unfinished, or 409 when the wait ran out.
  http::Response handle(const http::Request& request, const flows::FoundFlow& found);
  // For a page that authenticated its user itself (a session, not a bearer token): runs `flow` as
  // handle() would for a request at `path` with this Idempotency-Key and parameters (canonical
  // JSON, as read_flow_params gives them), waiting up to `wait` seconds (capped by
  // IDEMPOTENCY_MAX_WAIT) when the key is in flight. `request` is the page's own, for its remote
  // address and its wait deadline: return a deferral as it is to the server, which calls the
  // page's handler again (and so this) when the wait ends. Errors come back as their answers
  // (ApiError's status and JSON body), never thrown; the database's failures are thrown.
  http::Response run_for_user(const auth::User& user, const flows::RegisteredFlow& flow, std::string path,
                              std::string key, std::string params_json, const http::Request& request,
                              std::chrono::seconds wait);

 private:
  std::optional<http::Response> replay_from_memory(std::int64_t user_id, const FlowRequest& request);
  http::Response run(const FlowRequest& request, std::optional<auth::User> user);

  Dependencies deps_;
};

}  // namespace rr::api
