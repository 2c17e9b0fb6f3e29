// What a charge's metadata says about the ride it paid for (rr_user_id, rr_ride_id,
// rr_idempotency_key, rr_request_params, rr_ride_created_at): enough to rebuild the ride and its
// finished key without our database, or the reason it is not.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "common/payments/provider_list_page.hpp"
#include "common/rides/ride_params.hpp"

namespace rr::reconciliation {

struct RideFromMetadata {
  std::int64_t user_id = 0;
  std::int64_t ride_id = 0;
  std::string idempotency_key;  // the client's, verbatim
  std::string request_params;   // canonical JSON (rides::to_json) of `params`
  rides::RideParams params;
  std::string created_at;  // RFC 3339 as the metadata gives it
};

// Why a charge cannot be rebuilt from its metadata.
struct Unrebuildable {
  std::string reason;
};

// True when the object carries none of our rr_ metadata: not one of our charges at all (another
// product on the same provider account), never refunded automatically.
bool carries_no_rr_metadata(const payments::ProviderMetadata& metadata);

std::variant<RideFromMetadata, Unrebuildable> ride_from_metadata(const payments::ProviderMetadata& metadata);

// A positive id written in decimal, or nothing.
std::optional<std::int64_t> positive_id(const payments::ProviderMetadata& metadata, const char* name);

}  // namespace rr::reconciliation
