// rocket-rides-api's configuration, parsed once from the environment.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/config/settings.hpp"
#include "common/http/trusted_proxies.hpp"
#include "common/jobs/enqueuer_wakeup.hpp"
#include "common/web/session_settings.hpp"

namespace rr::api {

struct ApiSettings {
  config::DatabaseSettings database;
  config::PaymentSettings payment;
  config::WorkflowSettings workflow;
  std::string bind_address;                    // BIND_ADDRESS, default 127.0.0.1
  std::uint16_t port = 5000;                   // PORT, default 5000
  std::size_t database_pool_size = 16;         // DATABASE_POOL_SIZE
  std::size_t database_max_batch = 64;         // DATABASE_MAX_BATCH: coalesced calls at most (1: off)
  std::size_t database_batches_in_flight = 1;  // DATABASE_BATCHES_IN_FLIGHT: per batch function
  std::size_t worker_threads = 32;             // API_WORKERS: handlers may wait on the provider
  std::size_t io_threads = 1;                  // API_IO_THREADS (the cores; in use as busy): sockets, replays, fibers
  std::chrono::milliseconds shutdown_timeout;  // SHUTDOWN_TIMEOUT, default 25 s
  // SHUTDOWN_DRAIN seconds, default 0: after SIGTERM, how long /readyz answers 503 while everything
  // else is still served, so a load balancer's health checks take the server out of rotation
  // before it stops accepting. 0 keeps Ctrl-C under foreman instant.
  std::chrono::milliseconds shutdown_drain{0};
  // TOKEN_CACHE_TTL seconds, default 30: how long a token's user is remembered (0 disables).
  std::chrono::milliseconds token_cache_ttl{30000};
  // RESPONSE_CACHE_TTL seconds, default 60 (0 disables) and RESPONSE_CACHE_SIZE entries, default
  // 10000: finished keys' responses kept in memory so replays skip the database. Far below the
  // reaper's 72 h, after which a key may be gone.
  std::chrono::milliseconds response_cache_ttl{60000};
  std::size_t response_cache_size = 10000;
  // Where /metrics is served: never the public PORT, pool sizes and provider outcomes are not for
  // every client.
  config::MetricsSettings metrics;
  // API_MAX_CONNECTIONS, default what RLIMIT_NOFILE leaves beside everything else the API opens
  // (connection_budget.hpp): open client connections at most; at the cap the oldest connection
  // with no request in progress is closed to make room.
  std::size_t max_connections = 0;
  // API_MAX_IN_FLIGHT_PER_USER, default 8: one user's requests in progress at most (queued or
  // running, counted once the token's user is known); beyond it 429 with Retry-After.
  std::size_t max_in_flight_per_user = 8;
  // API_MAX_QUEUED_REQUESTS, default 256: requests waiting for a worker at most; beyond it 503
  // with Retry-After at once.
  std::size_t max_queued_requests = 256;
  // API_FIBERS, default 256 (0: none): flow requests (POST /rides, cancel) whose user the I/O
  // thread knows run at most this many at once as fibers on their connection's I/O thread
  // (common/fiber/fiber.hpp), suspended rather than holding a worker while they wait for the
  // database or the provider; beyond it they queue for the workers as before.
  std::size_t max_fibers = 256;
  // IDEMPOTENCY_MAX_WAIT whole seconds, default 10, at most 300 (0 turns waiting off): the longest a request whose key
  // is in flight waits for it when it asks to (Prefer: wait=N, RFC 7240) instead of 409 at once.
  std::chrono::seconds idempotency_max_wait{10};
  // IDEMPOTENCY_MAX_WAITERS_PER_USER, default 64, from 1 to the process's 1024 waiters: one user's
  // requests waiting for keys in flight at most; beyond it that user's next one gets 429 with
  // Retry-After (the pages: their 409 page) while everyone else's waits proceed.
  std::size_t idempotency_max_waiters_per_user = 64;
  // ENQUEUER_WAKEUP_DEBOUNCE: how often at most the API wakes the enqueuer after staging jobs.
  jobs::EnqueuerWakeupSettings enqueuer_wakeup;
  // SESSION_TTL and SESSION_COOKIE_SECURE: the rider pages' sessions (common/web/).
  web::SessionSettings sessions;
  // API_TRUSTED_PROXIES, default empty: addresses and CIDRs of the proxies (HAProxy) whose
  // X-Forwarded-For names the client for origin_ip, the access log and per-address bounds.
  http::TrustedProxies trusted_proxies;
  // AUTH_FAILURES_PER_MINUTE, default 20: failed authentications (unknown tokens, failed sign-ins)
  // one client address may cost the database a minute; beyond it 429 with Retry-After.
  std::size_t auth_failures_per_minute = 20;
  static ApiSettings from_env(const config::Environment& env);
};

}  // namespace rr::api
