// Parsing of the reaper's settings; defaults follow the design.
#include "common/maintenance/reaper_settings.hpp"

namespace rr::maintenance {

namespace {
// Keys expire on a scale of hours; a check a minute keeps batches small without busy polling.
constexpr double kDefaultIdleSleepSeconds = 60;
}  // namespace

ReaperSettings ReaperSettings::from_env(const config::Environment& env) {
  ReaperSettings settings;
  settings.database = config::DatabaseSettings::from_env(env);
  settings.workflow = config::WorkflowSettings::from_env(env);
  settings.loop = config::LoopSettings::from_env(env, "REAPER", kDefaultIdleSleepSeconds);
  // At least an hour: a shorter horizon would forget keys that clients are still retrying.
  settings.max_age = env.seconds("REAPER_MAX_AGE", 259200, 3600, 365 * 86400);
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
