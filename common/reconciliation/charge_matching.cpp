// One provider charge against our records: matched, its ledger row or its whole ride rebuilt, or
// a break (its amount, currency or customer differs; it cannot be rebuilt and is refunded or left).
#include "common/payments/provider_key.hpp"
#include "common/reconciliation/charge_metadata.hpp"
#include "common/reconciliation/pass_context.hpp"
#include "common/reconciliation/reconciliation_statements.hpp"
#include "common/rides/ride_params.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::reconciliation {
namespace {

// What differs between the provider's charge and what we recorded, "" when nothing.
std::string difference(const payments::ListedCharge& charge, std::int64_t amount, const std::string& currency,
                       const std::optional<std::string>& customer) {
  std::string differs;
  auto add = [&](const std::string& what) { differs += (differs.empty() ? "" : ", ") + what; };
  if (charge.amount != amount) add("amount " + std::to_string(charge.amount) + " != " + std::to_string(amount));
  if (charge.currency != currency) add("currency " + charge.currency + " != " + currency);
  if (!customer || charge.customer != *customer) add("customer " + charge.customer + " != " + customer.value_or("?"));
  return differs;
}

}  // namespace

void ReconciliationPass::reconcile_charge(Context& context, const payments::ListedCharge& charge) {
  if (!charge.succeeded) return;  // a declined charge took no money: nothing to match

  auto ledger = context.read(statements::kChargeLedgerRow, charge.id);
  if (!ledger.empty()) {
    const auto& row = ledger[0];
    auto differs = difference(charge, row[2].as<std::int64_t>(), row[3].as<std::string>(),
                              row[4].as<std::optional<std::string>>());
    if (differs.empty()) {
      ++context.report.matched;
      return;
    }
    context.record({"charge_mismatch", charge.id, row[0].as<std::int64_t>(), "left_for_review",
                    Details().text("differs", differs).integer("provider_amount", charge.amount).json()});
    return;
  }

  if (carries_no_rr_metadata(charge.metadata)) {
    // Not made by this suite (another product on the same account?): never refunded by us.
    context.record({"charge_without_metadata", charge.id, std::nullopt, "left_for_review",
                    Details().integer("amount", charge.amount).text("customer", charge.customer).json()});
    return;
  }
  auto parsed = ride_from_metadata(charge.metadata);
  if (auto* problem = std::get_if<Unrebuildable>(&parsed)) {
    unrebuildable_charge(context, charge, "charge_unrebuildable", problem->reason, std::nullopt);
    return;
  }
  const auto& ride = std::get<RideFromMetadata>(parsed);

  auto customer = context.read(statements::kUserCustomer, ride.user_id);
  if (customer.empty()) {
    unrebuildable_charge(context, charge, "charge_unrebuildable", "unknown user", ride.ride_id);
    return;
  }
  if (customer[0][0].as<std::string>() != charge.customer) {
    unrebuildable_charge(context, charge, "charge_unrebuildable", "the user's customer differs from the charge's",
                         ride.ride_id);
    return;
  }

  auto existing = context.read(statements::kRideById, ride.ride_id);
  if (!existing.empty()) {
    const auto& row = existing[0];
    auto ride_charge = row[1].as<std::optional<std::string>>();
    if (row[0].as<std::int64_t>() == ride.user_id && ride_charge == charge.id) {
      // The ride has its charge; only the ledger row is gone.
      context.record({"charge_without_ledger_row", charge.id, ride.ride_id, "ledger_row_written", "{}"},
                     [&](db::Transaction& tx) {
                       context.conn.exec(tx, statements::kInsertChargeLedgerRow, charge.id, ride.ride_id, ride.user_id,
                                         charge.amount, charge.currency);
                     });
      ++context.report.rebuilt;
      return;
    }
    if (row[0].as<std::int64_t>() == ride.user_id && !ride_charge && row[4].as<bool>()) {
      // The ride's own request has not finished: it (or the completer) records this charge
      // through the same derived provider key.
      ++context.report.matched;
      return;
    }
    unrebuildable_charge(context, charge, "charge_unrebuildable", "the ride id is taken by a different ride",
                         ride.ride_id);
    return;
  }

  auto key = context.read(statements::kKeyOf, ride.user_id, ride.idempotency_key);
  if (!key.empty()) {
    if (key[0][0].as<bool>()) {
      // The client retried after the loss and its request is still running: it gets this very
      // charge through the derived provider key, on the ride it made.
      ++context.report.matched;
      return;
    }
    unrebuildable_charge(context, charge, "charge_unrebuildable", "the request's key exists, finished, on another ride",
                         ride.ride_id);
    return;
  }

  // The restore case: the ride, its key and its ledger row are gone. All of them come back in
  // one transaction, the key finished with the 201 rendered from the ride (as a normal finish
  // stores it), so the client's retry replays the original answer and charges nothing.
  std::string provider_key =
      payments::charge_provider_key(provider_.settings().provider_key_secret, ride.user_id, ride.idempotency_key);
  context.record(
      {"charge_without_ride", charge.id, ride.ride_id, "ride_rebuilt",
       Details().integer("user_id", ride.user_id).text("idempotency_key", ride.idempotency_key).json()},
      [&](db::Transaction& tx) {
        auto key_id = context.conn
                          .exec(tx, statements::kInsertFinishedRideKey, ride.user_id, ride.idempotency_key,
                                ride.request_params, ride.created_at, provider_key, rides::kCreatedAnswerRenderer)[0][0]
                          .as<std::int64_t>();
        context.conn.exec(
            tx, statements::kInsertRebuiltRide, ride.ride_id, ride.created_at, key_id,
            rides::format_coordinate(ride.params.origin_lat), rides::format_coordinate(ride.params.origin_lon),
            rides::format_coordinate(ride.params.target_lat), rides::format_coordinate(ride.params.target_lon),
            charge.id, ride.user_id, ride.request_params);
        context.conn.exec(tx, statements::kInsertChargeLedgerRow, charge.id, ride.ride_id, ride.user_id, charge.amount,
                          charge.currency);
      });
  ++context.report.rebuilt;
}

// Refunded once its grace has passed (RECONCILE_UNREBUILDABLE=refund), with a provider key fixed
// by the charge, so no second pass, and no cancel of the same charge, can refund it again.
void ReconciliationPass::unrebuildable_charge(Context& context, const payments::ListedCharge& charge,
                                              const std::string& kind, const std::string& reason,
                                              std::optional<std::int64_t> ride_id) {
  if (!context.read(statements::kRefundedByReconciliation, charge.id).empty()) {
    ++context.report.matched;  // refunded by an earlier pass: settled
    return;
  }
  auto details = Details().text("reason", reason).integer("amount", charge.amount).text("customer", charge.customer);
  if (context.options.unrebuildable == UnrebuildablePolicy::leave) {
    context.record({kind, charge.id, ride_id, "left_for_review", details.json()});
    return;
  }
  if (charge.amount_refunded >= charge.amount) {
    context.record({kind, charge.id, ride_id, "already_refunded", details.json()});
    return;
  }
  auto grace_seconds = std::chrono::duration_cast<std::chrono::seconds>(context.options.refund_grace).count();
  if (context.now - charge.created < grace_seconds) {
    context.record({kind, charge.id, ride_id, "refund_after_grace",
                    details.integer("refund_due_at", charge.created + grace_seconds).json()});
    return;
  }
  if (context.options.dry_run) {
    if (context.record({kind, charge.id, ride_id, "refunded", details.json()})) ++context.report.refunded;
    return;
  }
  payments::RefundRequest request;
  request.charge = charge.id;
  // User 0 is no user: the key is the charge's alone, apart from every cancel's.
  request.idempotency_key = payments::refund_provider_key(provider_.settings().provider_key_secret, 0, charge.id);
  auto outcome = provider_.create_refund(request);
  using Kind = payments::RefundOutcome::Kind;
  if (outcome.kind == Kind::refunded) {
    context.record({kind, charge.id, ride_id, "refunded", details.text("refund", outcome.refund_id).json()});
    ++context.report.refunded;
    return;
  }
  if (outcome.kind == Kind::refused && outcome.error_code == "charge_already_refunded") {
    context.record({kind, charge.id, ride_id, "already_refunded", details.json()});
    return;
  }
  throw PassFailed("refunding unrebuildable charge " + charge.id + " failed: " + outcome.message);
}

}  // namespace rr::reconciliation
