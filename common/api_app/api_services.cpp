// The services built from the settings, in the order they depend on each other.
#include "common/api_app/api_services.hpp"

#include <chrono>

namespace rr::api {
namespace {

// /readyz: the database is pinged once a second on a connection of its own, and counts as
// reachable for three seconds after a successful ping (HAProxy checks every 500 ms; fall 2).
constexpr std::chrono::milliseconds kReadinessPingInterval{1000};
constexpr std::chrono::milliseconds kReadinessStaleAfter{3000};
// Write fences: asked every two seconds, so writes reopen within seconds of the pass that covers
// the fence's window, at one indexed query per process.
constexpr std::chrono::milliseconds kWriteFenceInterval{2000};

// The runner's options with the process's DATABASE_MAX_BATCH and DATABASE_BATCHES_IN_FLIGHT.
idempotency::RunnerOptions with_coalescing(idempotency::RunnerOptions options, const ApiSettings& settings) {
  options.max_coalesced_calls = settings.database_max_batch;
  options.max_coalesced_in_flight = settings.database_batches_in_flight;
  return options;
}

}  // namespace

ApiServices::ApiServices(const ApiSettings& settings, idempotency::RunnerOptions runner_options)
    : settings_(settings),
      pool_(settings.database.url, settings.database.session, settings.database_pool_size, std::chrono::seconds(5)),
      stripe_(settings.payment),
      tokens_(10000, settings.token_cache_ttl),
      finished_(settings.response_cache_size, settings.response_cache_ttl),
      runner_(pool_, with_coalescing(std::move(runner_options), settings)),
      enqueuer_wakeup_(jobs::make_enqueuer_wakeup(settings.enqueuer_wakeup, settings.database.url)),
      failed_auth_({.failures_per_minute = settings.auth_failures_per_minute}),
      authenticator_(pool_, tokens_, failed_auth_),
      key_waiters_(pool_, {.max_waiters = idempotency::kMaxKeyWaitersPerProcess,
                           .max_waiters_per_user = settings.idempotency_max_waiters_per_user,
                           .lock_timeout = settings.workflow.lock_timeout}),
      flows_({pool_, tokens_, finished_, runner_, stripe_, settings.workflow.lock_timeout, enqueuer_wakeup_.get(),
              &key_waiters_, settings.idempotency_max_wait, &failed_auth_}),
      sessions_(pool_, settings_.sessions),
      session_lookup_(sessions_, failed_auth_),
      in_flight_(settings.max_in_flight_per_user),
      riders_(session_lookup_, in_flight_),
      readiness_(settings.database.url, kReadinessPingInterval, kReadinessStaleAfter),
      write_fence_(settings.database.url, kWriteFenceInterval),
      metrics_page_(pool_, runner_) {}

Collaborators ApiServices::collaborators() {
  return {pool_,     authenticator_,  flows_,  readiness_,   draining_, write_fence_,
          sessions_, session_lookup_, riders_, failed_auth_, tokens_};
}

}  // namespace rr::api
