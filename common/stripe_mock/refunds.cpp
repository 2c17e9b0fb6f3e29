// POST /v1/refunds: a full or partial refund of a charge, refused the way Stripe refuses one (an
// unknown or failed charge, more than is left to refund, nothing left at all), recorded on its
// charge so the charge's amount_refunded, refunded and refunds list show it.
#include <cstdio>

#include "common/stripe_mock/mock.hpp"
#include "common/stripe_mock/stripe_errors.hpp"

namespace rr::stripe_mock {
namespace {

bool valid_reason(const std::string& reason) {
  return reason == "duplicate" || reason == "fraudulent" || reason == "requested_by_customer";
}

// "$20.00": how Stripe's refund errors write amounts (two decimals whatever the currency).
std::string money(std::int64_t cents) {
  char text[32];
  std::snprintf(text, sizeof text, "$%lld.%02lld", static_cast<long long>(cents / 100),
                static_cast<long long>(cents % 100));
  return text;
}

}  // namespace

http::Response Mock::create_refund(const Params& params, const std::string& idempotency_key) {
  if (auto refused = reject_unknown(params, {"amount", "charge", "reason"})) return *refused;
  auto charge_id = param(params, "charge");
  if (!charge_id || charge_id->empty()) return missing("charge");
  auto reason = param(params, "reason");
  if (reason && !valid_reason(*reason)) {
    return stripe_error(400, "invalid_request_error",
                        "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer",
                        {.code = "parameter_invalid_string", .param = "reason"});
  }
  std::optional<std::int64_t> requested;
  if (auto amount_text = param(params, "amount")) {
    auto amount = positive_amount(*amount_text, "amount");
    if (auto* error = std::get_if<http::Response>(&amount)) return *error;
    requested = std::get<std::int64_t>(amount);
  }
  auto metadata_or_error = metadata(params);
  if (auto* error = std::get_if<http::Response>(&metadata_or_error)) return *error;

  auto found = charges_by_id_.find(*charge_id);
  if (found == charges_by_id_.end()) return no_such("charge", *charge_id, "charge");
  Charge& charge = *found->second;
  if (!charge.succeeded) {
    return stripe_error(400, "invalid_request_error",
                        "Charge " + charge.id + " has failed and cannot be refunded: nothing was captured.",
                        {.code = "charge_not_refundable", .param = "charge"});
  }
  std::int64_t left = charge.amount - charge.amount_refunded;
  if (left <= 0) {
    return stripe_error(400, "invalid_request_error", "Charge " + charge.id + " has already been refunded.",
                        {.code = "charge_already_refunded", .param = "charge"});
  }
  if (requested && *requested > left) {
    return stripe_error(
        400, "invalid_request_error",
        "Refund amount (" + money(*requested) + ") is greater than unrefunded amount on charge (" + money(left) + ")",
        {.code = "amount_too_large", .param = "amount"});
  }

  Refund& refund = refunds_.emplace_back(Refund{
      .id = new_id("re_"),
      .idempotency_key = idempotency_key,
      .charge = charge.id,
      .amount = requested.value_or(left),
      .currency = charge.currency,
      .created = now_epoch(),
      .balance_transaction = new_id("txn_"),
      .reason = reason,
      .metadata = std::get<Metadata>(std::move(metadata_or_error)),
  });
  refunds_by_id_.emplace(refund.id, &refund);
  charge.amount_refunded += refund.amount;
  charge.refunds.push_back(&refund);
  ++stats_.refunds;
  http::Response response;
  response.body = to_json(refund);
  return response;
}

}  // namespace rr::stripe_mock
