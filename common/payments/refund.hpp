// The payment provider's side of giving money back: one refund of a charge, and what its outcome
// means for a workflow.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/payments/provider_metadata.hpp"

namespace rr::payments {

struct RefundRequest {
  std::string charge;                  // the ch_... id to refund
  std::optional<std::int64_t> amount;  // cents; unset: whatever of the charge is not refunded yet
  std::string reason;                  // "", duplicate, fraudulent or requested_by_customer
  std::string idempotency_key;         // fixed by what is refunded, same on every attempt
  Metadata metadata;                   // refund_metadata (provider_metadata.hpp), same on every attempt
};

struct RefundOutcome {
  enum class Kind {
    refunded,     // 2xx with a refund id
    refused,      // 400 or 404: final, the provider will not make this refund (see error_code)
    unavailable,  // timeout, reset, 5xx, other 4xx (bad API key, ...): retry later with the same key
  };
  Kind kind = Kind::unavailable;
  std::string refund_id;   // when refunded
  std::string error_code;  // when refused: Stripe's code, e.g. charge_already_refunded, resource_missing
  std::string message;     // provider's message or the transport error, for logs
  int http_status = 0;     // 0 when no response arrived
  bool timed_out = false;
};

}  // namespace rr::payments
