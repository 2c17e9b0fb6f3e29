// Phase started -> ride_created: the ride and its audit record, in one statement.
#include <stdexcept>

#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_params.hpp"
#include "common/rides/ride_statements.hpp"

namespace rr::rides {
idempotency::PhaseResult create_ride_phase(idempotency::PhaseContext& ctx, RideRun&) {
  const auto& key = ctx.key();
  auto params = from_json(key.request_params);
  if (!params) throw std::runtime_error("stored request_params of key " + std::to_string(key.id) + " are unreadable");
  return ctx.atomic([&](pqxx::work& tx) -> idempotency::PhaseResult {
    std::string ip = key.origin_ip.empty() ? "0.0.0.0" : key.origin_ip;
    ctx.exec(tx, statements::kInsertRideWithAudit, key.id, format_coordinate(params->origin_lat),
             format_coordinate(params->origin_lon), format_coordinate(params->target_lat),
             format_coordinate(params->target_lon), key.user_id, key.request_params, ip);
    return idempotency::RecoveryPoint{kRideCreated};
  });
}

}  // namespace rr::rides
