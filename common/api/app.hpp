// The API as a function from request to response: routing, authentication, the error boundary,
// request ids and the access log. The HTTP server only does I/O around it.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <variant>

#include "common/api/api_settings.hpp"
#include "common/api/database_readiness.hpp"
#include "common/api/flow_endpoint.hpp"
#include "common/api/in_flight_per_user.hpp"
#include "common/api/outcome_answers.hpp"
#include "common/auth/token_cache.hpp"
#include "common/auth/users.hpp"
#include "common/db/connection_pool.hpp"
#include "common/http/dispatch.hpp"
#include "common/http/message.hpp"
#include "common/idempotency/finished_responses.hpp"
#include "common/idempotency/phase_runner.hpp"
#include "common/payments/stripe_client.hpp"

namespace rr::api {

class App {
 public:
  explicit App(const ApiSettings& settings, idempotency::RunnerOptions runner_options = {});

  // Never throws: every failure becomes a response here.
  http::Response handle(const http::Request& request);
  // For the server's I/O thread: the answers that need nothing but memory (a replay of a key this
  // process saw finish, a validation error); nullopt sends the request on to handle()
  // on a worker. Never blocks, never throws.
  std::optional<http::Response> handle_in_memory(const http::Request& request);
  // The server's triage on the I/O thread (common/api/dispatch.cpp): answers what needs no
  // database (/healthz, 401 for a missing or malformed token, 404, 405, validation errors,
  // replays from memory, 429 for a user at API_MAX_IN_FLIGHT_PER_USER) and sends /readyz to the
  // control lane, the rest to the workers. A request of a user known from the token cache takes
  // its in-flight slot here (Request::admission). Never blocks, never throws.
  http::Dispatch dispatch(http::Request& request);

  // From now on /readyz answers 503 whatever the database says, so load balancers take this
  // process out of rotation while it still serves what they send meanwhile. Thread-safe; for the
  // drain before a graceful stop.
  void stop_being_ready() { draining_ = true; }

  // The Prometheus page: the process-wide registry plus this App's pool. Served on METRICS_PORT
  // (api/serve.cpp), never on the public port, where /metrics is a 404 like any unknown path.
  http::Response metrics_page();

  db::ConnectionPool& pool() { return pool_; }
  const ApiSettings& settings() const { return settings_; }

 private:
  http::Response route(const http::Request& request);
  // The answers that need no database, in the order the contract gives them; nullopt when the
  // request needs a handler. Takes the request's in-flight slot into `admission` when its user is
  // known from the token cache.
  std::optional<http::Response> answer_without_database(const http::Request& request,
                                                        std::shared_ptr<const void>& admission);
  // A slot for one more of this user's requests, or the 429 that refuses it.
  std::variant<std::shared_ptr<const InFlightPerUser::Slot>, http::Response> admit(std::int64_t user_id);
  void name_the_key(const http::Request& request, http::Response& response);
  http::Response finish(const http::Request& request, http::Response response, const std::string& request_id,
                        std::chrono::steady_clock::time_point started);
  http::Response get_ride(const http::Request& request, std::string_view id);
  http::Response list_rides(const http::Request& request);
  http::Response ready();
  auth::User authenticate(const http::Request& request);

  ApiSettings settings_;
  db::ConnectionPool pool_;
  payments::StripeClient stripe_;
  auth::TokenCache tokens_;
  idempotency::FinishedResponses finished_;
  idempotency::PhaseRunner runner_;
  FlowEndpoint flows_;  // every POST that runs as a registered flow
  InFlightPerUser in_flight_;
  DatabaseReadiness readiness_;
  std::atomic<bool> draining_{false};
};

// Whether the route needs the caller's user (every registered flow, GET /rides, GET /rides/{id}).
bool needs_user(const http::Request& request);

}  // namespace rr::api
