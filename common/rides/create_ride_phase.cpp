// Phase started -> ride_created: the ride and its audit record, in one statement; for a new key
// the API sends it with the key's creation in one round trip (create_ride_call), coalesced with
// concurrent requests' under load.
#include <stdexcept>

#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_params.hpp"
#include "common/rides/ride_statements.hpp"

namespace rr::rides {
idempotency::PhaseResult create_ride_phase(idempotency::PhaseContext& ctx, RideRun&) {
  const auto& key = ctx.key();
  auto params = from_json(key.request_params);
  if (!params) throw std::runtime_error("stored request_params of key " + std::to_string(key.id) + " are unreadable");
  return ctx.atomic([&](db::Transaction& tx) -> idempotency::PhaseResult {
    // The audit record's address ('' when the key has none) is rides_created_audit's to default.
    ctx.exec(tx, statements::kInsertRideWithAudit, key.id, format_coordinate(params->origin_lat),
             format_coordinate(params->origin_lon), format_coordinate(params->target_lat),
             format_coordinate(params->target_lon), key.user_id, key.request_params, key.origin_ip);
    return idempotency::RecoveryPoint{kRideCreated};
  });
}

db::Call create_ride_call(const idempotency::KeyRequest& request, const std::string& lock_token,
                          double lock_timeout_seconds, const std::string& payment_idempotency_key) {
  // The edge's read_flow_params produced params_json (to_json): its digits go out as they are.
  auto coordinates = canonical_coordinates(request.params_json);
  if (!coordinates) throw std::runtime_error("request parameters of a new ride are not canonical");
  const auto& [origin_lat, origin_lon, target_lat, target_lon] = *coordinates;
  auto call = db::call(statements::kCreateWithKey, request.user_id, request.idempotency_key, request.method,
                       request.path, request.params_json, request.origin_ip, lock_token, lock_timeout_seconds,
                       origin_lat, origin_lon, target_lat, target_lon, payment_idempotency_key);
  // Concurrent requests' first phases share one round trip and one commit
  // (db::CoalescedCalls): under load, fewer commits for the same keys.
  call.batch_function = statements::kCreateWithKeys;
  return call;
}

}  // namespace rr::rides
