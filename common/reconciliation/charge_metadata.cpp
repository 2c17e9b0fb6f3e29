// Reading a charge's rr_ metadata back, strictly: a value that does not read is a reason not to
// rebuild, never a guess.
#include "common/reconciliation/charge_metadata.hpp"

#include "common/config/environment.hpp"
#include "common/reconciliation/rfc3339.hpp"

namespace rr::reconciliation {
namespace {

// The API's own bound on a client's Idempotency-Key (sql/001): 20 to 255 printable ASCII bytes.
bool valid_client_key(const std::string& key) {
  if (key.size() < 20 || key.size() > 255) return false;
  for (char c : key) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

bool carries_no_rr_metadata(const payments::ProviderMetadata& metadata) {
  for (const auto& [name, value] : metadata) {
    if (name.starts_with("rr_")) return false;
  }
  return true;
}

std::optional<std::int64_t> positive_id(const payments::ProviderMetadata& metadata, const char* name) {
  auto found = metadata.find(name);
  if (found == metadata.end()) return std::nullopt;
  auto value = config::parse_integer(found->second);
  if (!value || *value <= 0) return std::nullopt;
  return value;
}

std::variant<RideFromMetadata, Unrebuildable> ride_from_metadata(const payments::ProviderMetadata& metadata) {
  RideFromMetadata ride;
  auto user = positive_id(metadata, "rr_user_id");
  if (!user) return Unrebuildable{"rr_user_id missing or not a positive id"};
  auto ride_id = positive_id(metadata, "rr_ride_id");
  if (!ride_id) return Unrebuildable{"rr_ride_id missing or not a positive id"};
  ride.user_id = *user;
  ride.ride_id = *ride_id;

  auto key = metadata.find("rr_idempotency_key");
  if (key == metadata.end() || !valid_client_key(key->second)) {
    return Unrebuildable{"rr_idempotency_key missing or not a valid Idempotency-Key"};
  }
  ride.idempotency_key = key->second;

  auto params = metadata.find("rr_request_params");
  if (params == metadata.end()) return Unrebuildable{"rr_request_params missing"};
  auto parsed = rides::from_json(params->second);
  if (!parsed || !rides::valid_latitude(parsed->origin_lat) || !rides::valid_longitude(parsed->origin_lon) ||
      !rides::valid_latitude(parsed->target_lat) || !rides::valid_longitude(parsed->target_lon)) {
    return Unrebuildable{"rr_request_params is not a ride's coordinates"};
  }
  ride.params = *parsed;
  // Stored canonically, as the API stores a new key's params, so a retry's params compare equal.
  ride.request_params = rides::to_json(*parsed);

  auto created = metadata.find("rr_ride_created_at");
  if (created == metadata.end() || !parse_rfc3339(created->second)) {
    return Unrebuildable{"rr_ride_created_at missing or not an RFC 3339 time"};
  }
  ride.created_at = created->second;
  return ride;
}

}  // namespace rr::reconciliation
