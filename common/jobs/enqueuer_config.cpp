// Parsing and validation of the enqueuer's settings; every problem names its variable.
#include "common/jobs/enqueuer_config.hpp"

#include <algorithm>
#include <cctype>

namespace rr::jobs {

namespace {

// Sidekiq accepts any string, but a queue name also becomes part of a Redis key and of log lines:
// keep to what every Sidekiq deployment uses.
bool valid_queue_name(const std::string& name) {
  return !name.empty() && name.size() <= 100 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

}  // namespace

EnqueuerConfig EnqueuerConfig::from_env(const config::Environment& env) {
  EnqueuerConfig result;
  result.database = config::DatabaseSettings::from_env(env);
  if (env.get("LISTEN_DATABASE_URL")) {
    result.listen_url = env.url("LISTEN_DATABASE_URL", std::nullopt, {"postgresql://", "postgres://"});
  } else if (result.database.session.statements == db::StatementMode::prepared) {
    result.listen_url = result.database.url;
  }
  const std::string redis_url = config::RedisSettings::from_env(env).url;
  try {
    result.redis = redis::parse_redis_url(redis_url);
  } catch (const redis::RedisUrlError& e) {
    throw config::ConfigError("REDIS_URL", e.what());
  }
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
