// Reconciliation's settings, shared by the `reconcile` command and the completer's continuous pass.
#pragma once

#include <chrono>

#include "common/config/environment.hpp"

namespace rr::reconciliation {

// What becomes of a paid charge that cannot be rebuilt into a ride (no or garbled metadata, its
// ride id taken by another ride, an unknown user): refunded once its grace has passed, or left
// for a person. Either way a break row says so.
enum class UnrebuildablePolicy { refund, leave };

struct ReconcileSettings {
  // RECONCILE_UNREBUILDABLE: refund (default) or leave. Refund by default: such a charge is money
  // taken with nothing booked, and the grace leaves a person time to act first.
  UnrebuildablePolicy unrebuildable = UnrebuildablePolicy::refund;
  std::chrono::milliseconds refund_grace{std::chrono::hours(1)};  // RECONCILE_REFUND_GRACE seconds
  // The completer's continuous pass: every RECONCILE_INTERVAL seconds (default 300, 0 = off) over
  // the last RECONCILE_WINDOW seconds (default 3600), widened to an open write fence's start.
  std::chrono::milliseconds interval{std::chrono::minutes(5)};
  std::chrono::milliseconds window{std::chrono::hours(1)};
  static ReconcileSettings from_env(const config::Environment& env);
};

}  // namespace rr::reconciliation
