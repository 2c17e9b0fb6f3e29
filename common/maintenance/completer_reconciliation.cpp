// The loop's part of reconciliation: when a pass is due, its window, and the metrics it leaves.
#include "common/maintenance/completer_reconciliation.hpp"

#include "common/base/log.hpp"
#include "common/db/transaction.hpp"
#include "common/metrics/registry.hpp"
#include "common/reconciliation/reconciliation_statements.hpp"

namespace rr::maintenance {
namespace {

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The age of the newest window end a pass finished, whichever completer ran it.
void publish_lag(db::ConnectionPool& pool) {
  auto conn = pool.acquire();
  db::Transaction tx(conn.conn(), conn.statement_timeout());
  auto rows = conn.exec(tx, reconciliation::statements::kLagSeconds);
  tx.commit();
  if (rows.empty() || rows[0][0].is_null()) return;
  metrics::default_registry()
      .gauge("rocket_rides_reconciliation_lag_seconds",
             "Seconds since the end of the newest window a reconciliation pass finished.")
      .set(rows[0][0].as<double>());
}

}  // namespace

CompleterReconciliation::CompleterReconciliation(db::ConnectionPool& pool, const payments::StripeClient& provider,
                                                 const config::PaymentSettings& payment,
                                                 reconciliation::ReconcileSettings settings)
    : pool_(pool), provider_(provider), listing_(payment), settings_(settings) {}

reconciliation::PassReport CompleterReconciliation::run_now() {
  std::int64_t now = unix_now();
  auto window_seconds = std::chrono::duration_cast<std::chrono::seconds>(settings_.window).count();
  reconciliation::PassWindow window{now - window_seconds, now, true};
  {
    auto conn = pool_.acquire();
    db::Transaction tx(conn.conn(), conn.statement_timeout());
    auto fence = conn.exec(tx, reconciliation::statements::kOpenFenceSince);
    tx.commit();
    if (!fence.empty() && !fence[0][0].is_null()) {
      window.since = std::min(window.since, fence[0][0].as<std::int64_t>());
    }
  }
  reconciliation::PassOptions options;
  options.unrebuildable = settings_.unrebuildable;
  options.refund_grace = settings_.refund_grace;
  options.role = "completer";
  reconciliation::ReconciliationPass pass(pool_, listing_, provider_, options);
  auto report = pass.run(window);
  auto& registry = metrics::default_registry();
  for (const auto& line : report.breaks) {
    registry
        .counter("rocket_rides_reconciliation_breaks_total", "Reconciliation breaks recorded, by kind.",
                 {{"kind", line.kind}})
        .inc();
  }
  if (report.rebuilt > 0 || report.refunded > 0 || !report.breaks.empty()) {
    log::info("reconciliation pass", {{"matched", report.matched},
                                      {"rebuilt", report.rebuilt},
                                      {"refunded", report.refunded},
                                      {"breaks", report.breaks.size()}});
  }
  return report;
}

bool CompleterReconciliation::run_if_due() {
  if (settings_.interval.count() == 0) return false;
  auto now = std::chrono::steady_clock::now();
  if (now < next_due_) return false;
  next_due_ = now + settings_.interval;
  bool finished = false;
  try {
    run_now();
    finished = true;
  } catch (const reconciliation::PassAlreadyRunning&) {
    log::debug("reconciliation: another pass holds the lease");
  } catch (const std::exception& e) {
    log::error("reconciliation pass failed; it runs again at the next interval", {{"error", e.what()}});
  }
  try {
    publish_lag(pool_);
  } catch (const std::exception& e) {
    log::debug("reconciliation lag not read", {{"error", e.what()}});
  }
  return finished;
}

}  // namespace rr::maintenance
