// The services a request needs, built once per process from the settings: the pool, the provider
// client, the token cache and the authenticator, the runner and its replay cache, the waiters for
// a key in flight, the flow endpoint, the rider pages' sessions, the per-user limit and the
// readiness pinger. Each is owned here, declared before what is built with it; the request pipeline
// (request_pipeline.hpp) and the endpoints are handed only what they use.
#pragma once

#include <atomic>
#include <memory>

#include "common/api/authenticator.hpp"
#include "common/api/database_readiness.hpp"
#include "common/api/flow_endpoint.hpp"
#include "common/api/in_flight_per_user.hpp"
#include "common/api/metrics_page.hpp"
#include "common/api/write_fence_watch.hpp"
#include "common/api_app/api_settings.hpp"
#include "common/api_app/routes.hpp"
#include "common/auth/auth_failure_throttle.hpp"
#include "common/auth/token_cache.hpp"
#include "common/db/connection_pool.hpp"
#include "common/idempotency/finished_responses.hpp"
#include "common/idempotency/key_waiters.hpp"
#include "common/idempotency/phase_runner.hpp"
#include "common/jobs/enqueuer_wakeup.hpp"
#include "common/payments/stripe_client.hpp"
#include "common/web/session_lookup.hpp"
#include "common/web/session_store.hpp"
#include "common/web/signed_in_riders.hpp"

namespace rr::api {

class ApiServices {
 public:
  ApiServices(const ApiSettings& settings, idempotency::RunnerOptions runner_options);
  ApiServices(const ApiServices&) = delete;
  ApiServices& operator=(const ApiServices&) = delete;

  // What the route table builds the endpoints with (routes.hpp).
  Collaborators collaborators();
  Authenticator& authenticator() { return authenticator_; }
  InFlightPerUser& in_flight() { return in_flight_; }

  // From now on /readyz answers 503 whatever the database says (see App::stop_being_ready).
  void stop_being_ready() { draining_ = true; }
  http::Response metrics_page() { return metrics_page_.render(); }
  db::ConnectionPool& pool() { return pool_; }
  const ApiSettings& settings() const { return settings_; }

 private:
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
  web::SessionLookup session_lookup_;  // throttled with failed_auth_
  InFlightPerUser in_flight_;          // the API's and the pages' callers alike
  web::SignedInRiders riders_;
  DatabaseReadiness readiness_;
  WriteFenceWatch write_fence_;
  std::atomic<bool> draining_{false};
  MetricsPage metrics_page_;
};

}  // namespace rr::api
