// Parsing of the API's settings.
#include "common/api_app/api_settings.hpp"

#include <stdexcept>

#include <algorithm>
#include <thread>

#include "common/api/connection_budget.hpp"
#include "common/http/connection_limit.hpp"
#include "common/idempotency/key_waiters.hpp"

namespace rr::api {

namespace {

// API_IO_THREADS when unset: one per core (1 to 8). They are not all in use at once: the server
// starts on one and takes the next in only while those in use are busy (IoThreadBalance). An I/O
// thread runs the request fibers of its connections, so new keys are mostly waiting for
// PostgreSQL and the provider, and one thread, whose wake-ups each find more events ready, serves
// them cheapest (on 2 cores beside PostgreSQL, bench/api_bench.sh: 145 instead of 175 us of CPU
// per new key than with two threads always in use); replays from memory keep a thread busy and
// then spread over the others.
std::int64_t default_io_threads() {
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::thread::hardware_concurrency()), 1, 8);
}

}  // namespace

ApiSettings ApiSettings::from_env(const config::Environment& env) {
  ApiSettings settings;
  settings.database = config::DatabaseSettings::from_env(env);
  settings.payment = config::PaymentSettings::from_env(env);
  settings.workflow = config::WorkflowSettings::from_env(env);
  settings.bind_address = env.string_or("BIND_ADDRESS", "127.0.0.1");
  settings.port = env.port("PORT", 5000);
  settings.database_pool_size = static_cast<std::size_t>(env.integer("DATABASE_POOL_SIZE", 16, 1, 1000));
  settings.database_max_batch = static_cast<std::size_t>(env.integer("DATABASE_MAX_BATCH", 64, 1, 1024));
  settings.database_batches_in_flight = static_cast<std::size_t>(env.integer("DATABASE_BATCHES_IN_FLIGHT", 1, 1, 64));
  settings.worker_threads = static_cast<std::size_t>(env.integer("API_WORKERS", 32, 1, 4096));
  settings.io_threads = static_cast<std::size_t>(env.integer("API_IO_THREADS", default_io_threads(), 1, 64));
  settings.shutdown_timeout = env.seconds("SHUTDOWN_TIMEOUT", 25, 0, 3600);
  settings.shutdown_drain = env.seconds("SHUTDOWN_DRAIN", 0, 0, 3600);
  try {
    settings.trusted_proxies = http::TrustedProxies::parse(env.string_or("API_TRUSTED_PROXIES", ""));
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError("API_TRUSTED_PROXIES", e.what());
  }
  settings.auth_failures_per_minute = static_cast<std::size_t>(env.integer("AUTH_FAILURES_PER_MINUTE", 20, 1, 1000000));
  settings.token_cache_ttl = env.seconds("TOKEN_CACHE_TTL", 30, 0, 3600);
  settings.response_cache_ttl = env.seconds("RESPONSE_CACHE_TTL", 60, 0, 3600);
  settings.response_cache_size = static_cast<std::size_t>(env.integer("RESPONSE_CACHE_SIZE", 10000, 0, 10000000));
  settings.metrics = config::MetricsSettings::from_env(env);
  settings.max_in_flight_per_user = static_cast<std::size_t>(env.integer("API_MAX_IN_FLIGHT_PER_USER", 8, 1, 100000));
  settings.max_queued_requests = static_cast<std::size_t>(env.integer("API_MAX_QUEUED_REQUESTS", 256, 1, 1000000));
  settings.max_fibers = static_cast<std::size_t>(env.integer("API_FIBERS", 256, 0, 100000));
  // Whole seconds, as Prefer: wait=N counts them.
  settings.idempotency_max_wait = std::chrono::seconds(env.integer("IDEMPOTENCY_MAX_WAIT", 10, 0, 300));
  settings.idempotency_max_waiters_per_user = static_cast<std::size_t>(env.integer(
      "IDEMPOTENCY_MAX_WAITERS_PER_USER", 64, 1, static_cast<std::int64_t>(idempotency::kMaxKeyWaitersPerProcess)));
  settings.enqueuer_wakeup = jobs::EnqueuerWakeupSettings::from_env(env);
  settings.sessions = web::SessionSettings::from_env(env);
  // Checked last: the reserve depends on the pool, worker and I/O thread settings above.
  settings.max_connections = connection_cap(env, http::descriptor_limit(),
                                            reserved_descriptors(settings.database_pool_size, settings.worker_threads,
                                                                 settings.max_fibers, settings.io_threads));
  return settings;
}

}  // namespace rr::api
