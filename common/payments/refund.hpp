// The payment provider's side of a cancellation: one refund of a ride's charge, and what its
// outcome means for the workflow.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace rr::payments {

struct RefundRequest {
  std::string charge;                  // the ride's stripe_charge_id: a refund is only ever of that charge
  std::optional<std::int64_t> amount;  // cents; nothing refunds the whole charge
  std::string idempotency_key;         // the ride's refund_idempotency_key, same on every attempt
  std::map<std::string, std::string> metadata;  // sent as metadata[name]=value
};

struct RefundOutcome {
  enum class Kind {
    refunded,          // 2xx with a refund id
    already_refunded,  // 400 charge_already_refunded: refunded before, by another provider key
    no_such_charge,    // 404 resource_missing: the charge is unknown to the provider
    unavailable,       // timeout, reset, 5xx, other 4xx: retry later, not stored
  };
  Kind kind = Kind::unavailable;
  std::string refund_id;  // when refunded
  std::string message;    // provider's message or the transport error, for logs
  int http_status = 0;    // 0 when no response arrived
  bool timed_out = false;
};

}  // namespace rr::payments
