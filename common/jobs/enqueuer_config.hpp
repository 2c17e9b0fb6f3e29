// The enqueuer's configuration, parsed once from the environment: where Postgres and Redis are,
// which Sidekiq queue to push to, and the loop's knobs (ENQUEUER_*).
#pragma once

#include <string>

#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/redis/connection.hpp"
#include "common/redis/redis_url.hpp"

namespace rr::jobs {

struct EnqueuerConfig {
  std::string database_url;    // DATABASE_URL
  redis::RedisEndpoint redis;  // REDIS_URL
  redis::ConnectOptions redis_options;
  std::string queue = "default";  // ENQUEUER_QUEUE: the Sidekiq queue, pushed to queue:<name>
  // ENQUEUER_BATCH_SIZE (rows per transaction and per Redis round trip), ENQUEUER_IDLE_SLEEP
  // (default 5 s: only the fallback poll, since NOTIFY wakes the loop), ENQUEUER_MAX_BACKOFF.
  config::LoopSettings loop;

  static EnqueuerConfig from_env(const config::Environment& env);
};

// The idle sleep when ENQUEUER_IDLE_SLEEP is unset, in seconds.
inline constexpr double kDefaultEnqueuerIdleSleep = 5.0;

}  // namespace rr::jobs
