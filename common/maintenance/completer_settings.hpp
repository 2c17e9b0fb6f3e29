// rocket-rides-completer's configuration, parsed once from the environment and validated at start.
#pragma once

#include <chrono>

#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/jobs/enqueuer_wakeup.hpp"
#include "common/maintenance/completer.hpp"
#include "common/reconciliation/reconcile_settings.hpp"

namespace rr::maintenance {

struct CompleterSettings {
  config::DatabaseSettings database;
  config::PaymentSettings payment;
  config::WorkflowSettings workflow;
  config::LoopSettings loop;                     // COMPLETER_BATCH_SIZE, COMPLETER_IDLE_SLEEP, ...
  std::chrono::milliseconds min_age;             // COMPLETER_MIN_AGE seconds, default 300
  std::chrono::milliseconds last_run_threshold;  // COMPLETER_LAST_RUN_THRESHOLD seconds, default 60
  jobs::EnqueuerWakeupSettings enqueuer_wakeup;  // ENQUEUER_WAKEUP_DEBOUNCE, as the API's
  reconciliation::ReconcileSettings reconcile;   // RECONCILE_INTERVAL, RECONCILE_WINDOW, ...
  static CompleterSettings from_env(const config::Environment& env);

  // What the Completer itself needs (no URLs, no secrets).
  CompleterOptions completer_options() const;
};

}  // namespace rr::maintenance
