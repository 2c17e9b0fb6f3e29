// Settings shared by several binaries, each parsed once from the environment (names in DESIGN.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/config/environment.hpp"
#include "common/db/session_options.hpp"

namespace rr::config {

struct DatabaseSettings {
  std::string url;  // DATABASE_URL, a libpq URI
  // DATABASE_PREPARED_STATEMENTS, on (default) or off: off sends every statement unnamed and keeps
  // no state in the server session, for a transaction-pooling PgBouncer.
  // DATABASE_STATEMENT_TIMEOUT seconds, default 30 (0: none): every statement's bound.
  // DATABASE_CALL_TIMEOUT seconds, default 35 (0: none): a request fiber's wait for one call's
  // answer, past which the request answers 503 and the connection is discarded.
  db::SessionOptions session;
  static DatabaseSettings from_env(const Environment& env);
};

struct RedisSettings {
  std::string url;  // REDIS_URL: redis://[:password@]host:port/db or unix:///path/to/socket
  static RedisSettings from_env(const Environment& env);
};

inline constexpr std::size_t kMinProviderKeySecretBytes = 32;
// Public, so never a production secret: only for test-mode provider keys.
inline constexpr const char* kDevelopmentProviderKeySecret = "rocket-rides-development-provider-key-secret";

struct PaymentSettings {
  std::string api_base;               // STRIPE_API_BASE, default https://api.stripe.com
  std::string api_key;                // STRIPE_API_KEY, required
  std::chrono::milliseconds timeout;  // STRIPE_TIMEOUT seconds, default 10: connect plus response
  // PROVIDER_KEY_SECRET: keys the HMAC that derives the idempotency keys sent to the provider
  // (common/payments/provider_key.hpp), so each deployment's keys are its own. Required, at least
  // kMinProviderKeySecretBytes, when STRIPE_API_KEY is a live key; unset in test mode, the fixed
  // kDevelopmentProviderKeySecret (and development_provider_key_secret says so), as it is for
  // settings a test builds by hand.
  std::string provider_key_secret = kDevelopmentProviderKeySecret;
  bool development_provider_key_secret = true;
  static PaymentSettings from_env(const Environment& env);
};

// sk_live_... or rk_live_...: a key that moves real money.
bool is_live_stripe_key(std::string_view api_key);

struct WorkflowSettings {
  std::chrono::milliseconds lock_timeout;  // IDEMPOTENCY_KEY_LOCK_TIMEOUT seconds, default 90
  static WorkflowSettings from_env(const Environment& env);
};

// Where a process serves its Prometheus page: METRICS_PORT (0 = unset: no endpoint) on
// METRICS_ADDRESS (default 127.0.0.1), never the API's public PORT.
struct MetricsSettings {
  std::uint16_t port = 0;
  std::string address = "127.0.0.1";
  static MetricsSettings from_env(const Environment& env);
};

// The knobs every background loop shares; `prefix` is ENQUEUER, COMPLETER or REAPER.
struct LoopSettings {
  std::int64_t batch_size;                     // <PREFIX>_BATCH_SIZE, default 1000
  std::chrono::milliseconds idle_sleep;        // <PREFIX>_IDLE_SLEEP seconds, sleep after a pass with no work
  std::chrono::milliseconds max_backoff;       // <PREFIX>_MAX_BACKOFF seconds, cap of the error backoff
  MetricsSettings metrics;                     // METRICS_PORT, METRICS_ADDRESS
  std::chrono::milliseconds shutdown_timeout;  // SHUTDOWN_TIMEOUT seconds, default 25
  static LoopSettings from_env(const Environment& env, const std::string& prefix, double default_idle_sleep);
};

}  // namespace rr::config
