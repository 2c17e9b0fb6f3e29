// One provider refund against our records: matched, or the cancellation a restore lost written
// back (the ride cancelled with this refund id, its ledger row, its cancel key when the metadata
// allows) so that nothing ever refunds the ride again; else a break.
#include "common/reconciliation/charge_metadata.hpp"
#include "common/reconciliation/pass_context.hpp"
#include "common/reconciliation/reconciliation_statements.hpp"
#include "common/rides/cancel_params.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::reconciliation {

void ReconciliationPass::reconcile_refund(Context& context, const payments::ListedRefund& refund) {
  if (!refund.succeeded) return;

  auto ledger = context.read(statements::kRefundLedgerRow, refund.id);
  if (!ledger.empty()) {
    const auto& row = ledger[0];
    std::string differs;
    if (row[2].as<std::int64_t>() != refund.amount) {
      differs = "amount " + std::to_string(refund.amount) + " != " + row[2].as<std::string>();
    }
    if (row[3].as<std::string>() != refund.currency) {
      differs += (differs.empty() ? "" : ", ") + ("currency " + refund.currency + " != " + row[3].as<std::string>());
    }
    if (row[4].as<std::string>() != refund.charge) {
      differs += (differs.empty() ? "" : ", ") + ("charge " + refund.charge + " != " + row[4].as<std::string>());
    }
    if (differs.empty()) {
      ++context.report.matched;
      return;
    }
    context.record({"refund_mismatch", refund.id, row[0].as<std::int64_t>(), "left_for_review",
                    Details().text("differs", differs).json()});
    return;
  }
  if (!context.read(statements::kRefundedByReconciliation, refund.charge).empty()) {
    ++context.report.matched;  // this pass's own kind of refund, of a charge that could not be rebuilt
    return;
  }

  // The refunded ride: the one the charge's ledger row names (rebuilt earlier in this pass if
  // the restore lost it).
  auto charge = context.read(statements::kChargeLedgerRow, refund.charge);
  if (charge.empty()) {
    context.record({"refund_without_ride", refund.id, std::nullopt, "left_for_review",
                    Details()
                        .text("charge", refund.charge)
                        .text("reason", "no ride records this charge (is the charge older than the window?)")
                        .json()});
    return;
  }
  std::int64_t ride_id = charge[0][0].as<std::int64_t>();
  std::int64_t user_id = charge[0][1].as<std::int64_t>();
  auto ride = context.read(statements::kRideById, ride_id);
  bool cancelled = ride[0][2].as<bool>();
  auto ride_refund = ride[0][3].as<std::optional<std::string>>();
  auto write_ledger_row = [&](db::Transaction& tx) {
    context.conn.exec(tx, statements::kInsertRefundLedgerRow, refund.id, refund.charge, ride_id, user_id, refund.amount,
                      refund.currency);
  };

  if (ride_refund == refund.id) {
    context.record({"refund_without_ledger_row", refund.id, ride_id, "ledger_row_written", "{}"}, write_ledger_row);
    ++context.report.rebuilt;
    return;
  }
  if (cancelled && !ride_refund) {
    // Cancelled when the provider said "already refunded": now we know by which refund.
    context.record({"refund_without_ledger_row", refund.id, ride_id, "refund_id_recorded", "{}"},
                   [&](db::Transaction& tx) {
                     context.conn.exec(tx, statements::kRecordRefundId, ride_id, refund.id);
                     write_ledger_row(tx);
                   });
    ++context.report.rebuilt;
    return;
  }
  if (cancelled) {
    context.record({"refund_mismatch", refund.id, ride_id, "left_for_review",
                    Details().text("differs", "the ride was cancelled with refund " + *ride_refund).json()});
    return;
  }

  // The restore lost the cancellation: the ride is cancelled with this refund, at its time.
  auto key = refund.metadata.find("rr_idempotency_key");
  auto params_text = refund.metadata.find("rr_request_params");
  std::optional<rides::CancelParams> params;
  if (params_text != refund.metadata.end()) params = rides::cancel_params_from_json(params_text->second);
  bool key_rebuildable = key != refund.metadata.end() && key->second.size() >= 20 && key->second.size() <= 255 &&
                         params && params->ride_id == ride_id &&
                         positive_id(refund.metadata, "rr_user_id") == std::optional(user_id);
  std::optional<std::string> reason;
  if (params) reason = params->reason;
  context.record({"refund_without_cancel", refund.id, ride_id, "ride_cancelled",
                  Details()
                      .text("charge", refund.charge)
                      .text("cancel_key", key_rebuildable ? "rebuilt" : "not rebuildable")
                      .json()},
                 [&](db::Transaction& tx) {
                   std::string audit = params ? rides::to_json(*params) : "{}";
                   context.conn.exec(tx, statements::kCancelWithLostRefund, ride_id, refund.id, refund.created, reason,
                                     audit);
                   write_ledger_row(tx);
                   if (!key_rebuildable) return;
                   // The cancel's 200 is the ride as it now is, as the refund phase renders it.
                   auto view = context.conn.exec(tx, statements::kRideView, ride_id);
                   std::string body = rides::ride_body(rides::ride_view_from(view[0]));
                   context.conn.exec(tx, statements::kInsertFinishedCancelKey, user_id, key->second,
                                     rides::to_json(*params), "/rides/" + std::to_string(ride_id) + "/cancel", body);
                 });
  ++context.report.rebuilt;
}

}  // namespace rr::reconciliation
