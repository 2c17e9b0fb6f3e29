// Parsing of the reaper's settings; defaults follow the design.
#include "common/maintenance/reaper_settings.hpp"

namespace rr::maintenance {

namespace {
// Keys expire on a scale of days; a check a minute keeps batches small without busy polling.
constexpr double kDefaultReaperIdleSleepSeconds = 60;
}  // namespace

ReaperSettings ReaperSettings::from_env(const config::Environment& env) {
  ReaperSettings settings;
  settings.database = config::DatabaseSettings::from_env(env);
  settings.workflow = config::WorkflowSettings::from_env(env);
  settings.loop = config::LoopSettings::from_env(env, "REAPER", kDefaultReaperIdleSleepSeconds);
  settings.max_age = env.seconds("REAPER_MAX_AGE", 259200, 0, 365 * 86400);
  if (settings.max_age < kMinReaperMaxAge) {
    // A key must outlive the provider's memory of its provider key: a retry of a request whose key
    // was reaped while the provider still remembers the key gets the provider's replay of a
    // charge that another ride row already records, instead of our own stored answer.
    throw config::ConfigError(
        "REAPER_MAX_AGE",
        "is " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(settings.max_age).count()) +
            " s; it must be at least " + std::to_string(kMinReaperMaxAge.count()) +
            " s (25 h): the payment provider keeps idempotency keys for 24 h, and a key must outlive them");
  }
  return settings;
}

ReaperOptions ReaperSettings::reaper_options() const {
  ReaperOptions options;
  options.max_age = max_age;
  options.batch_size = loop.batch_size;
  options.lock_timeout = workflow.lock_timeout;
  return options;
}

}  // namespace rr::maintenance
