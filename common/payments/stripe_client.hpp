// Creates charges and refunds through a Stripe-compatible HTTP API (the real one or
// rocket-rides-stripe-mock).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/config/settings.hpp"
#include "common/http/client.hpp"
#include "common/payments/charge.hpp"
#include "common/payments/refund.hpp"

namespace rr::payments {

class StripeClient {
 public:
  // Each daemon that charges or refunds makes its one client at start, which warns there, once,
  // when the provider keys derive from the development secret (PROVIDER_KEY_SECRET unset).
  explicit StripeClient(config::PaymentSettings settings);
  // What the phases derive the provider idempotency keys with (provider_key_secret).
  const config::PaymentSettings& settings() const { return settings_; }
  // POST {base}/v1/charges, form-encoded amount, currency, customer, description;
  // Authorization: Bearer {key}; Idempotency-Key: request.idempotency_key. Never throws for
  // provider or network trouble: that is ChargeOutcome::Kind::unavailable.
  ChargeOutcome create_charge(const ChargeRequest& request) const;
  // POST {base}/v1/refunds, form-encoded charge and, when set, amount and reason; the same
  // headers. Never throws for provider or network trouble: that is RefundOutcome::Kind::unavailable.
  RefundOutcome create_refund(const RefundRequest& request) const;

  // The customer's charge of the last 24 hours (the provider's key window) whose metadata holds
  // every pair of `wanted`: GET {base}/v1/charges?customer=...&created[gte]=...&limit=100, paged
  // with starting_after. For a charge the provider refused to replay (ChargeOutcome key_reused).
  FoundCharge find_charge(const std::string& customer, const Metadata& wanted) const;

 private:
  struct Answer;  // one POST's result as far as the wire goes (stripe_client.cpp)
  Answer post_form(const std::string& path, const std::vector<std::pair<std::string, std::string>>& fields,
                   const std::string& idempotency_key) const;
  Answer send(http::ClientRequest request) const;

  config::PaymentSettings settings_;
  // Kept-alive connections to the provider: a charge pays no connect or TLS handshake of its own
  // once traffic flows. Shared by copies, as the connections are.
  std::shared_ptr<http::Client> http_;
};

}  // namespace rr::payments
