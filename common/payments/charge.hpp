// The payment provider's side of a ride: one charge, and what its outcome means for the workflow.
#pragma once

#include <cstdint>
#include <string>

namespace rr::payments {

struct ChargeRequest {
  std::int64_t amount = 2000;  // cents
  std::string currency = "usd";
  std::string customer;  // the user's stripe_customer_id
  std::string description;
  std::string idempotency_key;  // the key row's payment_idempotency_key (provider_key.hpp), same on every attempt
};

struct ChargeOutcome {
  enum class Kind {
    charged,        // 2xx with a charge id
    card_declined,  // 402 card_error: final, stored
    unavailable,    // timeout, reset, 5xx, other 4xx (bad API key, ...): retry later, not stored
  };
  Kind kind = Kind::unavailable;
  std::string charge_id;  // when charged
  std::string message;    // provider's message or the transport error, for logs and the 402 body
  int http_status = 0;    // 0 when no response arrived
  bool timed_out = false;
};

}  // namespace rr::payments
