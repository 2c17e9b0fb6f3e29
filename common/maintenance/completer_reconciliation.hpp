// The completer's continuous reconciliation: every RECONCILE_INTERVAL, one pass over the last
// RECONCILE_WINDOW (widened back to the start of an open write fence, so a restore's fence
// reopens without an operator), one completer at a time through the pass's lease. Metrics:
// rocket_rides_reconciliation_breaks_total{kind} and rocket_rides_reconciliation_lag_seconds.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/db/connection_pool.hpp"
#include "common/payments/provider_listing.hpp"
#include "common/payments/stripe_client.hpp"
#include "common/reconciliation/reconcile_settings.hpp"
#include "common/reconciliation/reconciliation_pass.hpp"

namespace rr::maintenance {

class CompleterReconciliation {
 public:
  CompleterReconciliation(db::ConnectionPool& pool, const payments::StripeClient& provider,
                          const config::PaymentSettings& payment, reconciliation::ReconcileSettings settings);

  // A pass when one is due (never when RECONCILE_INTERVAL is 0); true when one ran to the end.
  // Never throws: a failed pass is logged and tried again at the next interval.
  bool run_if_due();
  // The pass itself, due or not (tests call it). Throws what the pass throws.
  reconciliation::PassReport run_now();

 private:
  db::ConnectionPool& pool_;
  const payments::StripeClient& provider_;
  payments::ProviderListing listing_;
  reconciliation::ReconcileSettings settings_;
  std::chrono::steady_clock::time_point next_due_{};
};

}  // namespace rr::maintenance
