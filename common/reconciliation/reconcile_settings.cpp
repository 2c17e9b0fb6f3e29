// Parsing of reconciliation's settings.
#include "common/reconciliation/reconcile_settings.hpp"

namespace rr::reconciliation {

ReconcileSettings ReconcileSettings::from_env(const config::Environment& env) {
  ReconcileSettings settings;
  auto policy = env.string_or("RECONCILE_UNREBUILDABLE", "refund");
  if (policy == "refund") {
    settings.unrebuildable = UnrebuildablePolicy::refund;
  } else if (policy == "leave") {
    settings.unrebuildable = UnrebuildablePolicy::leave;
  } else {
    throw config::ConfigError("RECONCILE_UNREBUILDABLE", "must be refund or leave, not \"" + policy + "\"");
  }
  settings.refund_grace = env.seconds("RECONCILE_REFUND_GRACE", 3600, 0, 30 * 86400);
  settings.interval = env.seconds("RECONCILE_INTERVAL", 300, 0, 86400);
  settings.window = env.seconds("RECONCILE_WINDOW", 3600, 1, 90 * 86400);
  return settings;
}

}  // namespace rr::reconciliation
