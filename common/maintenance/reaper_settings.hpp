// rocket-rides-reaper's configuration, parsed once from the environment and validated at start.
#pragma once

#include <chrono>

#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/maintenance/reaper.hpp"

namespace rr::maintenance {

// REAPER_MAX_AGE's floor: the 24 h for which the payment provider (Stripe) keeps an idempotency
// key, plus an hour for clock skew between us and the provider.
inline constexpr std::chrono::seconds kMinReaperMaxAge{25 * 3600};

struct ReaperSettings {
  config::DatabaseSettings database;
  config::WorkflowSettings workflow;  // IDEMPOTENCY_KEY_LOCK_TIMEOUT: keys in flight are left alone
  config::LoopSettings loop;          // REAPER_BATCH_SIZE, REAPER_IDLE_SLEEP, ...
  std::chrono::milliseconds max_age;  // REAPER_MAX_AGE seconds, default 259200 (72 h), at least kMinReaperMaxAge
  static ReaperSettings from_env(const config::Environment& env);

  ReaperOptions reaper_options() const;
};

}  // namespace rr::maintenance
