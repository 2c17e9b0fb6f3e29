// Parsing of the completer's settings; defaults follow the design.
#include "common/maintenance/completer_settings.hpp"

namespace rr::maintenance {

namespace {
// The completer sleeps this long after a pass that found nothing: keys become eligible only
// minutes after their client went away, so polling faster buys nothing.
constexpr double kDefaultCompleterIdleSleepSeconds = 10;
}  // namespace

CompleterSettings CompleterSettings::from_env(const config::Environment& env) {
  CompleterSettings settings;
  settings.database = config::DatabaseSettings::from_env(env);
  settings.payment = config::PaymentSettings::from_env(env);
  settings.workflow = config::WorkflowSettings::from_env(env);
  settings.loop = config::LoopSettings::from_env(env, "COMPLETER", kDefaultCompleterIdleSleepSeconds);
  settings.min_age = env.seconds("COMPLETER_MIN_AGE", 300, 0, 30 * 86400);
  settings.last_run_threshold = env.seconds("COMPLETER_LAST_RUN_THRESHOLD", 60, 0, 30 * 86400);
  settings.enqueuer_wakeup = jobs::EnqueuerWakeupSettings::from_env(env);
  settings.reconcile = reconciliation::ReconcileSettings::from_env(env);
  return settings;
}

CompleterOptions CompleterSettings::completer_options() const {
  CompleterOptions options;
  options.min_age = min_age;
  options.last_run_threshold = last_run_threshold;
  options.lock_timeout = workflow.lock_timeout;
  options.batch_size = loop.batch_size;
  return options;
}

}  // namespace rr::maintenance
