// Phase refund_pending -> finished: refund the ride's own charge (no transaction open meanwhile),
// then mark the ride cancelled, stage the cancellation receipt and store the 200 in one
// transaction. The provider key derives from the charge (payments::refund_provider_key): every
// attempt, by any cancel request (whatever its Idempotency-Key, even one whose key row a failover
// lost) or completer, sends the same one, so the provider refunds the charge once.
#include <chrono>
#include <stdexcept>

#include "common/base/log.hpp"
#include "common/payments/provider_call_metrics.hpp"
#include "common/payments/provider_key.hpp"
#include "common/rides/cancel_flow.hpp"
#include "common/rides/cancel_params.hpp"
#include "common/rides/cancel_statements.hpp"
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides {
namespace {

const char* outcome_label(const payments::RefundOutcome& outcome) {
  switch (outcome.kind) {
    case payments::RefundOutcome::Kind::refunded:
      return "refunded";
    case payments::RefundOutcome::Kind::refused:
      return "refused";
    case payments::RefundOutcome::Kind::unavailable:
      return outcome.timed_out ? "timeout" : "unavailable";
  }
  return "unavailable";
}

struct RefundTarget {
  std::string charge_id;
  std::string idempotency_key;
  payments::Metadata metadata;
};

}  // namespace

idempotency::PhaseResult refund_phase(idempotency::PhaseContext& ctx, const flows::FlowEnvironment& run) {
  const auto& key = ctx.key();
  auto params = cancel_params_from_json(key.request_params);
  if (!params) throw std::runtime_error("stored request_params of key " + std::to_string(key.id) + " are unreadable");

  // Read under our fence: the charge never changes once set. The key is stored before it is sent,
  // so the ride shows the key the provider saw. The metadata names the cancel request that first
  // stored it, whichever request this is: every attempt under the key must send the same.
  RefundTarget target;
  ctx.atomic([&](db::Transaction& tx) -> idempotency::PhaseResult {
    auto rows = ctx.exec(tx, statements::kRefundTarget, params->ride_id, key.user_id);
    if (rows.empty()) throw std::runtime_error("ride " + std::to_string(params->ride_id) + " has no charge to refund");
    auto charge_id = rows[0][0].as<std::string>();
    target.charge_id = charge_id;
    target.idempotency_key =
        payments::refund_provider_key(run.stripe.settings().provider_key_secret, key.user_id, charge_id);
    auto kept = ctx.exec(tx, statements::kStoreRefundKey, params->ride_id, key.user_id, target.idempotency_key,
                         key.idempotency_key, key.request_params);
    if (kept.empty()) throw std::runtime_error("ride " + std::to_string(params->ride_id) + " vanished");
    target.metadata = payments::refund_metadata({.user_id = key.user_id,
                                                 .ride_id = params->ride_id,
                                                 .idempotency_key = kept[0][0].as<std::string>(),
                                                 .request_params = kept[0][1].as<std::string>(),
                                                 .charge = charge_id});
    return idempotency::NoOp{};
  });

  payments::RefundRequest refund;
  refund.charge = target.charge_id;
  refund.idempotency_key = target.idempotency_key;
  refund.reason = "requested_by_customer";
  refund.metadata = target.metadata;
  auto started = std::chrono::steady_clock::now();
  auto outcome = run.stripe.create_refund(refund);
  payments::record_provider_call(payments::kRefundCallFamilies, outcome_label(outcome),
                                 std::chrono::steady_clock::now() - started);

  std::optional<std::string> refund_id;
  switch (outcome.kind) {
    case payments::RefundOutcome::Kind::refunded:
      refund_id = outcome.refund_id;
      break;
    case payments::RefundOutcome::Kind::refused:
      if (outcome.error_code == "charge_already_refunded") {
        // Refunded under another provider key (by hand, or after the provider forgot ours): the
        // money is back, so the ride is cancelled, with no refund id of ours to show.
        log::warn("charge already refunded at the provider", {{"key_id", key.id}, {"ride_id", params->ride_id}});
        break;
      }
      // resource_missing and the like: our record and the provider disagree, a human must look.
      throw std::runtime_error("the provider refused to refund charge " + target.charge_id + " (" + outcome.error_code +
                               "): " + outcome.message);
    case payments::RefundOutcome::Kind::unavailable:
      log::warn("payment provider unavailable for a refund", {{"key_id", key.id},
                                                              {"http_status", outcome.http_status},
                                                              {"timed_out", outcome.timed_out},
                                                              {"error", outcome.message}});
      throw idempotency::TransientFailure(idempotency::RetryReason::unavailable,
                                          "The payment provider is unavailable; retry with the same Idempotency-Key.",
                                          kProviderRetryAfterSeconds);
  }
  auto recorded = ctx.atomic([&](db::Transaction& tx) -> idempotency::PhaseResult {
    std::string ip = key.origin_ip.empty() ? "0.0.0.0" : key.origin_ip;
    auto rows = ctx.exec(tx, statements::kRecordRefund, params->ride_id, key.user_id, refund_id, params->reason,
                         kRideAmountCents, kRideCurrency, key.request_params, ip);
    if (rows.empty()) throw std::runtime_error("ride " + std::to_string(params->ride_id) + " vanished");
    return idempotency::FinalResult{200, ride_body(ride_view_from(rows[0]))};
  });
  // The cancellation receipt is committed (unless an earlier cancellation staged it, and then a
  // wake-up too many costs the enqueuer one empty pass).
  run.jobs_staged();
  return recorded;
}

}  // namespace rr::rides
