// Phase ride_created -> finished: charge the card (no transaction open meanwhile), then record the
// charge, stage the receipt and store the 201 in one call (record_charge_call), for a key this run
// created and a resumed one alike; a decline stores a 402.
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
    case payments::ChargeOutcome::Kind::key_reused:
      return "key_reused";
    case payments::ChargeOutcome::Kind::unavailable:
      return outcome.timed_out ? "timeout" : "unavailable";
  }
  return "unavailable";
}

// The ride the charge is for: carried from the creating call when this run created it (no round
// trip), else read under our fence (a resumed key: a retry, the completer). Stored state either
// way, so every attempt of the key names the same ride.
RideView ride_to_charge(idempotency::PhaseContext& ctx) {
  if (const auto& carried = ctx.carried(); carried.row) return ride_view_from(*carried.row, carried.first_column);
  RideView ride;
  ctx.atomic([&](db::Transaction& tx) -> idempotency::PhaseResult {
    auto rows = ctx.exec(tx, statements::kRideOfKey, ctx.key().id);
    if (rows.empty()) throw std::runtime_error("no ride for key " + std::to_string(ctx.key().id));
    ride = ride_view_from(rows[0]);
    return idempotency::NoOp{};
  });
  return ride;
}

// The provider refused to replay our key: a charge made under it with other metadata exists, that
// of an attempt whose ride a lost commit took (this ride is a new one, with another id). That
// charge is the one the card got; find it by the client's key and record it on this ride.
payments::ChargeOutcome adopt_lost_attempts_charge(const RideRun& run, const idempotency::KeyRow& key,
                                                   const payments::ChargeOutcome& refused) {
  auto found =
      run.stripe.find_charge(run.stripe_customer_id, {{payments::kMetadataUserId, std::to_string(key.user_id)},
                                                      {payments::kMetadataIdempotencyKey, key.idempotency_key}});
  payments::ChargeOutcome outcome;
  switch (found.kind) {
    case payments::FoundCharge::Kind::found:
      log::warn("the provider holds this key's charge from an attempt whose ride was lost; recording it",
                {{"key_id", key.id}, {"charge_id", found.charge_id}, {"succeeded", found.succeeded}});
      outcome.kind =
          found.succeeded ? payments::ChargeOutcome::Kind::charged : payments::ChargeOutcome::Kind::card_declined;
      outcome.charge_id = found.charge_id;
      return outcome;
    case payments::FoundCharge::Kind::absent:
      outcome.message =
          "the provider refused to replay the charge's key, and lists no charge of it: " + refused.message;
      break;
    case payments::FoundCharge::Kind::unavailable:
      outcome.message = "listing the provider's charges failed: " + found.message;
      break;
  }
  outcome.http_status = refused.http_status;
  return outcome;
}

}  // namespace

db::Call record_charge_call(const idempotency::KeyRow& key, const std::string& charge_id,
                            const idempotency::FinalResult& created) {
  auto call = db::call(statements::kRecordChargeAndFinish, key.id, key.lock_token, charge_id, kRideAmountCents,
                       kRideCurrency, key.user_id, created.code, created.body);
  // Concurrent requests' finishes share one round trip and one commit.
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
  const RideView ride = ride_to_charge(ctx);
  charge.metadata = payments::charge_metadata({.user_id = key.user_id,
                                               .ride_id = ride.id,
                                               .idempotency_key = key.idempotency_key,
                                               .request_params = key.request_params,
                                               .ride_created_at = ride.created_at});

  auto started = std::chrono::steady_clock::now();
  auto outcome = run.stripe.create_charge(charge);
  payments::record_provider_call(payments::kChargeCallFamilies, outcome_label(outcome),
                                 std::chrono::steady_clock::now() - started);
  if (outcome.kind == payments::ChargeOutcome::Kind::key_reused)
    outcome = adopt_lost_attempts_charge(run, key, outcome);
  switch (outcome.kind) {
    case payments::ChargeOutcome::Kind::charged: {
      // One way to finish, whether this run created the key or resumed it: the response is known
      // before the round trip that records the charge, stages the receipt and stores it, since the
      // ride cannot change while the key's lock is ours (the call raises if the ride is missing or
      // the lock gone).
      RideView charged = ride;
      charged.stripe_charge_id = outcome.charge_id;
      idempotency::FinalResult created{201, ride_created_body(charged)};
      ctx.atomic_call(record_charge_call(key, outcome.charge_id, created), created);
      run.jobs_staged();  // the receipt is committed: wake the enqueuer
      return created;
    }
    case payments::ChargeOutcome::Kind::card_declined:
      log::info("card declined", {{"key_id", key.id}});
      {
        idempotency::FinalResult declined{
            402, error_body("card_error", outcome.message.empty() ? "Your card was declined." : outcome.message)};
        ctx.atomic_call(idempotency::finish_call(key, declined), declined);
        return declined;
      }
    case payments::ChargeOutcome::Kind::key_reused:  // adopt_lost_attempts_charge answered it
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
