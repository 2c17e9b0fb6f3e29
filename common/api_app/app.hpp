// The API as a function from request to response: a router over the route table (routes.hpp) and
// the error boundary around its endpoints, with the per-user in-flight limit, request ids and the
// access log. The HTTP server only does I/O around it. App owns the collaborators the endpoints
// are built with; each endpoint is given only those it needs.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "common/api/authenticator.hpp"
#include "common/api/database_readiness.hpp"
#include "common/api/endpoint.hpp"
#include "common/api/flow_endpoint.hpp"
#include "common/api/in_flight_per_user.hpp"
#include "common/api/metrics_page.hpp"
#include "common/api_app/api_settings.hpp"
#include "common/api_app/routes.hpp"
#include "common/auth/auth_failure_throttle.hpp"
#include "common/auth/token_cache.hpp"
#include "common/db/connection_pool.hpp"
#include "common/http/dispatch.hpp"
#include "common/http/message.hpp"
#include "common/idempotency/finished_responses.hpp"
#include "common/idempotency/key_waiters.hpp"
#include "common/idempotency/phase_runner.hpp"
#include "common/jobs/enqueuer_wakeup.hpp"
#include "common/payments/stripe_client.hpp"
#include "common/web/session_store.hpp"
#include "common/web/signed_in_riders.hpp"

namespace rr::api {

class App {
 public:
  explicit App(const ApiSettings& settings, idempotency::RunnerOptions runner_options = {});

  // Never throws: every failure becomes a response here (the error boundary, failure_answer).
  http::Response handle(const http::Request& request);
  // The answers the I/O thread could give from memory for a request that needs a worker (a replay
  // of a key this process saw finish, a validation error); nullopt sends the request on to
  // handle(). Never blocks, never throws.
  std::optional<http::Response> handle_in_memory(const http::Request& request);
  // The server's triage on the I/O thread (triage.cpp): answers what needs no database (/healthz,
  // 401 for a missing or malformed token, 404, 405, validation errors, replays from memory, 429
  // for a user at API_MAX_IN_FLIGHT_PER_USER) and sends each other request to its route's lane.
  // A request of a user known from the token cache takes its in-flight slot here
  // (Request::admission). Never blocks, never throws.
  http::Dispatch dispatch(http::Request& request);

  // From now on /readyz answers 503 whatever the database says, so load balancers take this
  // process out of rotation while it still serves what they send meanwhile. Thread-safe; for the
  // drain before a graceful stop.
  void stop_being_ready() { draining_ = true; }

  // The Prometheus page (metrics_page.hpp), for METRICS_PORT.
  http::Response metrics_page() { return metrics_page_.render(); }

  db::ConnectionPool& pool() { return pool_; }
  const ApiSettings& settings() const { return settings_; }

 private:
  // The endpoint's answer, or the 404 or 405 when no route serves the request.
  http::Response route(const http::Request& request, const RouteLookup& lookup);
  // The answers that need no database, in the order the contract gives them; nullopt when the
  // request needs its endpoint's handle(). Takes the request's in-flight slot into `admission`
  // when its user is known from the token cache.
  std::optional<http::Response> answer_without_database(const http::Request& request, const RouteLookup& lookup,
                                                        std::shared_ptr<const void>& admission);
  // A slot for one more of this user's requests, or the 429 that refuses it.
  std::variant<std::shared_ptr<const InFlightPerUser::Slot>, http::Response> admit(std::int64_t user_id);
  // Names the request's Idempotency-Key on an answer made outside its endpoint.
  void name_the_key(const http::Request& request, const RouteLookup& lookup, http::Response& response);
  http::Response finish(const http::Request& request, const RouteLookup& lookup, http::Response response,
                        std::string request_id, std::chrono::steady_clock::time_point started);

  ApiSettings settings_;
  db::ConnectionPool pool_;
  payments::StripeClient stripe_;
  auth::TokenCache tokens_;
  idempotency::FinishedResponses finished_;
  idempotency::PhaseRunner runner_;
  // Null when ENQUEUER_WAKEUP_DEBOUNCE is 0. Declared before the endpoints that hand it to flows.
  std::unique_ptr<jobs::EnqueuerWakeup> enqueuer_wakeup_;
  auth::AuthFailureThrottle failed_auth_;
  Authenticator authenticator_;
  // Requests waiting for a key in flight (Prefer: wait=N); its poller uses pool_.
  idempotency::KeyWaiters key_waiters_;
  FlowEndpoint flows_;  // every POST that runs as a registered flow
  // The rider pages' sign-ins.
  web::SessionStore sessions_;
  InFlightPerUser in_flight_;  // the API's and the pages' callers alike
  web::SignedInRiders riders_;
  DatabaseReadiness readiness_;
  std::atomic<bool> draining_{false};
  MetricsPage metrics_page_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;  // one per route, in all_routes() order
};

}  // namespace rr::api
