// rocket-rides-api's configuration, parsed once from the environment.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/config/settings.hpp"

namespace rr::api {

struct ApiSettings {
  config::DatabaseSettings database;
  config::PaymentSettings payment;
  config::WorkflowSettings workflow;
  std::string bind_address;                    // BIND_ADDRESS, default 127.0.0.1
  std::uint16_t port = 5000;                   // PORT, default 5000
  std::size_t database_pool_size = 16;         // DATABASE_POOL_SIZE
  std::size_t worker_threads = 32;             // API_WORKERS: handlers may wait on the provider
  std::chrono::milliseconds shutdown_timeout;  // SHUTDOWN_TIMEOUT, default 25 s
  // TOKEN_CACHE_TTL seconds, default 30: how long a token's user is remembered (0 disables).
  std::chrono::milliseconds token_cache_ttl{30000};
  static ApiSettings from_env(const config::Environment& env);
};

}  // namespace rr::api
