// Creates charges through a Stripe-compatible HTTP API (the real one or rocket-rides-stripe-mock).
#pragma once

#include "common/config/settings.hpp"
#include "common/payments/charge.hpp"

namespace rr::payments {

class StripeClient {
 public:
  explicit StripeClient(config::PaymentSettings settings) : settings_(std::move(settings)) {}
  // POST {base}/v1/charges, form-encoded amount, currency, customer, description;
  // Authorization: Bearer {key}; Idempotency-Key: request.idempotency_key. Never throws for
  // provider or network trouble: that is ChargeOutcome::Kind::unavailable.
  ChargeOutcome create_charge(const ChargeRequest& request) const;

 private:
  config::PaymentSettings settings_;
};

}  // namespace rr::payments
