// The idempotency keys sent to the payment provider, derived from what identifies the operation
// rather than drawn at random: a request whose first commit a failover lost, retried by its client,
// makes a new key row, and only a key computed from the client's own request reaches the provider
// as the same key again (so the provider replays the charge instead of making a second one).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rr::payments {

// "rr-ch-" + lowercase hex of HMAC-SHA256(secret, "charge\n" + user_id + "\n" + client_key), where
// client_key is the Idempotency-Key the client sent (the key row's idempotency_key).
std::string charge_provider_key(std::string_view secret, std::int64_t user_id, std::string_view client_key);

// "rr-re-" + lowercase hex of HMAC-SHA256(secret, "refund\n" + user_id + "\n" + charge_id): fixed by
// the charge, so whichever cancel request asks, the provider refunds a charge at most once.
std::string refund_provider_key(std::string_view secret, std::int64_t user_id, std::string_view charge_id);

// Lowercase hex of HMAC-SHA256(secret, "rocket-rides provider key fingerprint v1"): tells two
// secrets apart without revealing either (provider_key_fingerprint.hpp records and compares it).
std::string provider_key_fingerprint(std::string_view secret);

}  // namespace rr::payments
