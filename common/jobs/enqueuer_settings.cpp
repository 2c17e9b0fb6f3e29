// Parsing and validation of the enqueuer's settings; every problem names its variable.
#include "common/jobs/enqueuer_settings.hpp"

#include <algorithm>
#include <cctype>

#include "common/config/database_tcp.hpp"
#include "common/redis/sentinel_list.hpp"

namespace rr::jobs {

namespace {

// Sidekiq accepts any string, but a queue name also becomes part of a Redis key and of log lines:
// keep to what every Sidekiq deployment uses.
bool valid_queue_name(const std::string& name) {
  return !name.empty() && name.size() <= 100 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

// REDIS_SENTINELS and REDIS_SENTINEL_MASTER come as a pair; with them REDIS_URL is optional and
// only its database, user and password count.
redis::RedisTarget redis_target_from_env(const config::Environment& env) {
  redis::RedisTarget target;
  const auto sentinels = env.get("REDIS_SENTINELS");
  const auto master = env.get("REDIS_SENTINEL_MASTER");
  if (sentinels && !master) throw config::ConfigError("REDIS_SENTINEL_MASTER", "is required with REDIS_SENTINELS");
  if (master && !sentinels) throw config::ConfigError("REDIS_SENTINELS", "is required with REDIS_SENTINEL_MASTER");
  if (sentinels) {
    try {
      target.sentinels = redis::parse_sentinel_list(*sentinels);
    } catch (const redis::RedisUrlError& e) {
      throw config::ConfigError("REDIS_SENTINELS", e.what());
    }
    try {
      target.sentinel_master = redis::validate_sentinel_master_name(*master);
    } catch (const redis::RedisUrlError& e) {
      throw config::ConfigError("REDIS_SENTINEL_MASTER", e.what());
    }
  }
  if (sentinels && !env.get("REDIS_URL")) return target;
  const std::string redis_url = config::RedisSettings::from_env(env).url;
  try {
    target.endpoint = redis::parse_redis_url(redis_url);
  } catch (const redis::RedisUrlError& e) {
    throw config::ConfigError("REDIS_URL", e.what());
  }
  if (sentinels && target.endpoint.is_unix_socket()) {
    throw config::ConfigError("REDIS_URL",
                              "must be a redis:// URL with REDIS_SENTINELS (the sentinels name a TCP address)");
  }
  return target;
}

}  // namespace

EnqueuerSettings EnqueuerSettings::from_env(const config::Environment& env) {
  EnqueuerSettings result;
  result.database = config::DatabaseSettings::from_env(env);
  if (env.get("LISTEN_DATABASE_URL")) {
    // Idle but for notifications: keepalives are what notice its server gone.
    result.listen_url = config::with_database_tcp_settings(
        env, env.url("LISTEN_DATABASE_URL", std::nullopt, {"postgresql://", "postgres://"}));
  } else if (result.database.session.statements == db::StatementMode::prepared) {
    result.listen_url = result.database.url;
  }
  result.redis = redis_target_from_env(env);
  result.replicas.required = static_cast<int>(env.integer("REDIS_MIN_REPLICAS", 0, 0, 100));
  result.queue = env.string_or("ENQUEUER_QUEUE", "default");
  if (!valid_queue_name(result.queue)) {
    throw config::ConfigError("ENQUEUER_QUEUE", "must be 1 to 100 letters, digits, '_', '-' or '.'");
  }
  const std::string timestamps = env.string_or("SIDEKIQ_TIMESTAMPS", "seconds");
  if (timestamps == "seconds") {
    result.timestamps = SidekiqTimestamps::seconds;
  } else if (timestamps == "milliseconds") {
    result.timestamps = SidekiqTimestamps::milliseconds;
  } else {
    throw config::ConfigError("SIDEKIQ_TIMESTAMPS", "must be seconds or milliseconds");
  }
  result.loop = config::LoopSettings::from_env(
      env, "ENQUEUER", result.listen_url.empty() ? kDefaultEnqueuerPollInterval : kDefaultEnqueuerIdleSleep);
  return result;
}

}  // namespace rr::jobs
