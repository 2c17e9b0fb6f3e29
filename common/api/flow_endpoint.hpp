// Every endpoint that runs as a registered flow (POST /rides, POST /rides/{id}/cancel): validate
// the request in the contract's order, take its key and let the phase runner drive the flow the
// registry names. A replay of a key this process saw finish is answered from memory, on the I/O
// thread. Knows no endpoint by name: the registry (common/flows/flow_registry.hpp) does.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/auth/token_cache.hpp"
#include "common/auth/users.hpp"
#include "common/db/connection_pool.hpp"
#include "common/flows/flow_registry.hpp"
#include "common/http/message.hpp"
#include "common/idempotency/finished_responses.hpp"
#include "common/idempotency/phase_runner.hpp"
#include "common/jobs/enqueuer_wakeup.hpp"
#include "common/payments/stripe_client.hpp"

namespace rr::api {

// A request for a registered flow, validated: 401 for the token's form, then 400 for the key,
// then the flow's own parameter errors; none of them writes a row.
struct FlowRequest {
  FlowRequest(const http::Request& request, const flows::FoundFlow& found);
  const flows::RegisteredFlow* flow;
  std::string token;
  std::string key;
  std::string path;
  std::string params_json;  // canonical: equal values give equal text
  std::string fingerprint;
  std::string remote_address;
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
  };
  explicit FlowEndpoint(Dependencies dependencies) : deps_(dependencies) {}

  // A validation error or a replay from memory, named with the request's key; nothing when the
  // request needs the database. Never blocks.
  std::optional<http::Response> answer_in_memory(const http::Request& request, const flows::FoundFlow& found);
  // The whole request; throws ApiError (named with the key) for what the client must be told.
  http::Response handle(const http::Request& request, const flows::FoundFlow& found);

  // A registered flow run for a user the caller already knows (the rider pages: the session's
  // user), with a key and parameters it has validated itself; the same keys, runner and answers as
  // handle() (the stored result, fresh or replayed; ApiError for the rest, not named with the key).
  struct KnownUserRequest {
    const flows::RegisteredFlow* flow;
    std::string key;          // already validated as an Idempotency-Key (request_parsing.hpp)
    std::string path;         // the flow's path, so the completer finds the flow of an abandoned key
    std::string params_json;  // from flow->read_params
    std::string remote_address;
  };
  http::Response run_for_user(const auth::User& user, const KnownUserRequest& request);

 private:
  std::optional<http::Response> replay_from_memory(std::int64_t user_id, const FlowRequest& request);
  http::Response run(const FlowRequest& request);

  Dependencies deps_;
};

}  // namespace rr::api
