// Phase ride_created -> finished: charge the card (no transaction open meanwhile), then record the
// charge, stage the receipt and store the 201 in one transaction; a decline stores a 402.
#include <chrono>

#include "common/base/error_body.hpp"
#include "common/base/log.hpp"
#include "common/idempotency/fence_calls.hpp"
#include "common/payments/provider_call_metrics.hpp"
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_response.hpp"
#include "common/rides/ride_statements.hpp"

namespace rr::rides {
namespace {

const char* outcome_label(const payments::ChargeOutcome& outcome) {
  switch (outcome.kind) {
    case payments::ChargeOutcome::Kind::charged:
      return "charged";
    case payments::ChargeOutcome::Kind::card_declined:
      return "declined";
    case payments::ChargeOutcome::Kind::unavailable:
      return outcome.timed_out ? "timeout" : "unavailable";
  }
  return "unavailable";
}

}  // namespace

db::Call record_charge_call(const idempotency::KeyRow& key, const std::string& charge_id,
                            const idempotency::FinalResult& created) {
  auto call = db::call(statements::kRecordChargeAndFinish, key.id, key.lock_token, charge_id, kRideAmountCents,
                       kRideCurrency, key.user_id, created.code, created.body);
  // Concurrent requests' finishes share one round trip and one commit (issue 31, point 2).
  call.batch_function = statements::kRecordChargesAndFinish;
  return call;
}

idempotency::PhaseResult charge_phase(idempotency::PhaseContext& ctx, RideRun& run) {
  const auto& key = ctx.key();
  payments::ChargeRequest charge;
  charge.amount = kRideAmountCents;
  charge.currency = kRideCurrency;
  charge.customer = run.stripe_customer_id;
  // The same on every attempt, from any key row of this request: the provider refuses a reused
  // key whose parameters differ, and a row recreated after a lost commit has a new id.
  charge.description = kChargeDescription;
  // Derived from the client's request when the key was created (create_ride_call); a key created
  // before keys were derived keeps the random one the provider may already have seen.
  charge.idempotency_key = key.payment_idempotency_key;

  auto started = std::chrono::steady_clock::now();
  auto outcome = run.stripe.create_charge(charge);
  payments::record_provider_call(payments::kChargeCallFamilies, outcome_label(outcome),
                                 std::chrono::steady_clock::now() - started);
  switch (outcome.kind) {
    case payments::ChargeOutcome::Kind::charged: {
      if (const auto& carried = ctx.carried(); carried.row) {
        // This run created the ride (create_ride_call): the response is known before the round trip
        // that records the charge, stages the receipt and stores it (the ride cannot change while
        // the key's lock is ours, and the function raises if the ride is missing or the lock gone).
        RideView ride = ride_view_from(*carried.row, carried.first_column);
        ride.stripe_charge_id = outcome.charge_id;
        idempotency::FinalResult created{201, ride_created_body(ride)};
        ctx.atomic_call(record_charge_call(key, outcome.charge_id, created), created);
        run.jobs_staged();  // the receipt is committed: wake the enqueuer
        return created;
      }
      auto recorded = ctx.atomic([&](db::Transaction& tx) -> idempotency::PhaseResult {
        auto rows = ctx.exec(tx, statements::kRecordChargeAndStageReceipt, key.id, outcome.charge_id, kRideAmountCents,
                             kRideCurrency, key.user_id);
        if (rows.empty()) throw std::runtime_error("no ride for key " + std::to_string(key.id));
        return idempotency::FinalResult{201, ride_created_body(ride_view_from(rows[0]))};
      });
      run.jobs_staged();  // the receipt is committed: wake the enqueuer
      return recorded;
    }
    case payments::ChargeOutcome::Kind::card_declined:
      log::info("card declined", {{"key_id", key.id}});
      {
        idempotency::FinalResult declined{
            402, error_body("card_error", outcome.message.empty() ? "Your card was declined." : outcome.message)};
        ctx.atomic_call(idempotency::finish_call(key, declined), declined);
        return declined;
      }
    case payments::ChargeOutcome::Kind::unavailable:
      break;
  }
  log::warn("payment provider unavailable", {{"key_id", key.id},
                                             {"http_status", outcome.http_status},
                                             {"timed_out", outcome.timed_out},
                                             {"error", outcome.message}});
  throw idempotency::TransientFailure(idempotency::RetryReason::unavailable,
                                      "The payment provider is unavailable; retry with the same Idempotency-Key.",
                                      kProviderRetryAfterSeconds);
}

}  // namespace rr::rides
