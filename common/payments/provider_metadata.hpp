// What every charge and refund carries to the provider as Stripe metadata (metadata[NAME]), so
// that the provider's records identify it without our database: reconciliation rebuilds a ride
// and its finished key from a charge's, and a cancellation from a refund's, after a restore. The
// values come from stored state only (the key row, the ride), never from the attempt: the
// provider refuses a replayed idempotency key whose parameters, metadata included, differ.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rr::payments {

// name -> value, in the order sent.
using Metadata = std::vector<std::pair<std::string, std::string>>;

inline constexpr const char* kMetadataUserId = "rr_user_id";
inline constexpr const char* kMetadataRideId = "rr_ride_id";
inline constexpr const char* kMetadataIdempotencyKey = "rr_idempotency_key";  // the client's, verbatim
inline constexpr const char* kMetadataRequestParams = "rr_request_params";    // the key row's, compact JSON
inline constexpr const char* kMetadataRideCreatedAt = "rr_ride_created_at";   // RFC 3339, UTC, microseconds
inline constexpr const char* kMetadataCharge = "rr_charge";                   // a refund's charge id

struct ChargeMetadataSource {
  std::int64_t user_id = 0;
  std::int64_t ride_id = 0;
  std::string idempotency_key;
  std::string request_params;   // JSON text, any spacing
  std::string ride_created_at;  // as the ride view renders it: 2026-11-27T12:00:00.123456Z
};
Metadata charge_metadata(const ChargeMetadataSource& source);

struct RefundMetadataSource {
  std::int64_t user_id = 0;
  std::int64_t ride_id = 0;
  std::string idempotency_key;  // of the cancel request the refund is kept for
  std::string request_params;   // that request's, JSON text
  std::string charge;
};
Metadata refund_metadata(const RefundMetadataSource& source);

// `json` with no whitespace between tokens, numbers and strings as written (PostgreSQL renders a
// JSONB value with a space after each ':' and ','). `json` itself when it is not JSON.
std::string compact_json(std::string_view json);

}  // namespace rr::payments
