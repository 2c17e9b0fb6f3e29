// POST /v1/refunds: a full or partial refund of a charge, refused the way Stripe refuses one (an
// unknown or failed charge, more than is left to refund, nothing left at all), recorded on its
// charge so the charge's amount_refunded, refunded and refunds list show it.
#include <cstdio>

#include "tools/stripe_mock/mock.hpp"
#include "tools/stripe_mock/objects.hpp"
#include "tools/stripe_mock/stripe_errors.hpp"

namespace rr::stripe_mock {
namespace {

std::optional<RefundReason> reason_named(const std::string& reason) {
  if (reason == "duplicate") return RefundReason::duplicate;
  if (reason == "fraudulent") return RefundReason::fraudulent;
  if (reason == "requested_by_customer") return RefundReason::requested_by_customer;
  return std::nullopt;
}

// "$20.00": how Stripe's refund errors write amounts (two decimals whatever the currency).
std::string money(std::int64_t cents) {
  char text[32];
  std::snprintf(text, sizeof text, "$%lld.%02lld", static_cast<long long>(cents / 100),
                static_cast<long long>(cents % 100));
  return text;
}

}  // namespace

Mock::Created Mock::create_refund(const Params& params, const std::string& idempotency_key) {
  if (auto refused = reject_unknown(params, {"amount", "charge", "reason"})) return {*refused};
  auto charge_id = param(params, "charge");
  if (!charge_id || charge_id->empty()) return {missing("charge")};
  auto reason_text = param(params, "reason");
  auto reason = reason_text ? reason_named(*reason_text) : std::optional(RefundReason::none);
  if (!reason) {
    return {stripe_error(400, "invalid_request_error",
                         "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer",
                         {.code = "parameter_invalid_string", .param = "reason"})};
  }
  std::optional<std::int64_t> requested;
  if (auto amount_text = param(params, "amount")) {
    auto amount = positive_amount(*amount_text, "amount");
    if (auto* error = std::get_if<http::Response>(&amount)) return {*error};
    requested = std::get<std::int64_t>(amount);
  }
  auto metadata_or_error = metadata(params);
  if (auto* error = std::get_if<http::Response>(&metadata_or_error)) return {*error};

  auto found = ledger_.find_charge(*charge_id);
  if (!found) return {no_such("charge", *charge_id, "charge")};
  const ChargeRecord& charge = ledger_.charge(*found);
  if (!charge.succeeded) {
    return {stripe_error(400, "invalid_request_error",
                         "Charge " + *charge_id + " has failed and cannot be refunded: nothing was captured.",
                         {.code = "charge_not_refundable", .param = "charge"})};
  }
  std::int64_t left = charge.amount - charge.amount_refunded;
  if (left <= 0) {
    return {stripe_error(400, "invalid_request_error", "Charge " + *charge_id + " has already been refunded.",
                         {.code = "charge_already_refunded", .param = "charge"})};
  }
  if (requested && *requested > left) {
    return {stripe_error(
        400, "invalid_request_error",
        "Refund amount (" + money(*requested) + ") is greater than unrefunded amount on charge (" + money(left) + ")",
        {.code = "amount_too_large", .param = "amount"})};
  }

  auto index = ledger_.add_refund(
      NewRefund{
          .idempotency_key = idempotency_key,
          .charge = *found,
          .amount = requested.value_or(left),
          .reason = *reason,
          .metadata = std::get<Metadata>(std::move(metadata_or_error)),
      },
      now_epoch());
  ++stats_.refunds;
  http::Response response;
  response.body = refund_json(ledger_, index);
  return {std::move(response), index};
}

}  // namespace rr::stripe_mock
