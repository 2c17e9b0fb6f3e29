// The payment provider's side of a ride: one charge, and what its outcome means for the workflow.
#pragma once

#include <cstdint>
#include <string>

#include "common/payments/provider_metadata.hpp"

namespace rr::payments {

struct ChargeRequest {
  std::int64_t amount = 2000;  // cents
  std::string currency = "usd";
  std::string customer;  // the user's stripe_customer_id
  std::string description;
  std::string idempotency_key;  // the key row's payment_idempotency_key (provider_key.hpp), same on every attempt
  Metadata metadata;            // charge_metadata (provider_metadata.hpp), same on every attempt of the key
};

struct ChargeOutcome {
  enum class Kind {
    charged,        // 2xx with a charge id
    card_declined,  // 402 card_error: final, stored
    // 400 idempotency_error: the provider holds a charge made under this key with other parameters
    // (an attempt whose ride a lost commit took: the retry's ride is another). find_charge finds it.
    key_reused,
    unavailable,  // timeout, reset, 5xx, other 4xx (bad API key, ...): retry later, not stored
  };
  Kind kind = Kind::unavailable;
  std::string charge_id;  // when charged
  std::string message;    // provider's message or the transport error, for logs and the 402 body
  int http_status = 0;    // 0 when no response arrived
  bool timed_out = false;
};

// What looking for a charge among the provider's found (StripeClient::find_charge).
struct FoundCharge {
  enum class Kind {
    found,        // charge_id names it; `succeeded` says whether it took the money or was declined
    absent,       // no such charge in the window
    unavailable,  // the listing failed: retry later
  };
  Kind kind = Kind::unavailable;
  std::string charge_id;
  bool succeeded = false;
  std::string message;  // why unavailable, for logs
};

}  // namespace rr::payments
