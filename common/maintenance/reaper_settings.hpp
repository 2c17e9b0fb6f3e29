// rocket-rides-reaper's configuration, parsed once from the environment and validated at start.
#pragma once

#include <chrono>

#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/maintenance/reaper.hpp"

namespace rr::maintenance {

struct ReaperSettings {
  config::DatabaseSettings database;
  config::WorkflowSettings workflow;  // IDEMPOTENCY_KEY_LOCK_TIMEOUT: keys in flight are left alone
  config::LoopSettings loop;          // REAPER_BATCH_SIZE, REAPER_IDLE_SLEEP, ...
  std::chrono::milliseconds max_age;  // REAPER_MAX_AGE seconds, default 259200 (72 h)
  static ReaperSettings from_env(const config::Environment& env);

  ReaperOptions reaper_options() const;
};

}  // namespace rr::maintenance
