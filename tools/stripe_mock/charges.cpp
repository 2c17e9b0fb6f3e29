// POST /v1/charges: validated the way Stripe validates a charge, recorded (declines too, as the
// failed charge a card error names), and answered in Stripe's wire format.
#include <algorithm>
#include <cctype>

#include "tools/stripe_mock/mock.hpp"
#include "tools/stripe_mock/objects.hpp"
#include "tools/stripe_mock/stripe_errors.hpp"

namespace rr::stripe_mock {
namespace {

// A three-letter ISO code, lower-cased as Stripe stores it; nothing when it is not one.
std::optional<std::string> currency_code(const std::string& text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.size() != 3 || !std::all_of(lower.begin(), lower.end(), [](char c) { return c >= 'a' && c <= 'z'; })) {
    return std::nullopt;
  }
  return lower;
}

}  // namespace

Mock::Created Mock::create_charge(const Params& params, const std::string& idempotency_key) {
  if (auto refused = reject_unknown(params, {"amount", "currency", "customer", "description"})) return {*refused};
  auto amount_text = param(params, "amount");
  if (!amount_text) return {missing("amount")};
  auto currency_text = param(params, "currency");
  if (!currency_text) return {missing("currency")};
  auto customer = param(params, "customer");
  if (!customer || customer->empty()) return {missing("customer")};
  auto amount = positive_amount(*amount_text, "amount");
  if (auto* error = std::get_if<http::Response>(&amount)) return {*error};
  auto currency = currency_code(*currency_text);
  if (!currency) {
    return {stripe_error(400, "invalid_request_error", "Invalid currency: " + *currency_text,
                         {.code = "parameter_invalid_string", .param = "currency"})};
  }
  auto metadata_or_error = metadata(params);
  if (auto* error = std::get_if<http::Response>(&metadata_or_error)) return {*error};

  // A magic customer, like Stripe's test card numbers, makes every charge fail as a decline.
  bool declined = customer->find("declined") != std::string::npos;
  auto index = ledger_.add_charge(
      NewCharge{
          .idempotency_key = idempotency_key,
          .customer = *customer,
          .currency = *currency,
          .description = param(params, "description"),
          .amount = std::get<std::int64_t>(amount),
          .succeeded = !declined,
          .metadata = std::get<Metadata>(std::move(metadata_or_error)),
      },
      now_epoch());
  if (declined) return {card_declined(ledger_.charge_id(ledger_.charge(index))), index};
  ++stats_.charges;
  http::Response response;
  response.body = charge_json(ledger_, index, ChargeMoment::now);
  return {std::move(response), index};
}

}  // namespace rr::stripe_mock
