// Phase started -> ride_created: the ride and its audit record, in one statement.
#include <stdexcept>

#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_params.hpp"

namespace rr::rides {
namespace {

const db::Statement kInsertRideWithAudit{
    "rides_insert_with_audit",
    "WITH ride AS ("
    "  INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id)"
    "  VALUES ($1, $2, $3, $4, $5, $6) RETURNING id"
    ") "
    "INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id) "
    "SELECT 'create_ride', $7::jsonb, $8::cidr, ride.id, 'ride', $6 FROM ride RETURNING resource_id"};

}  // namespace

idempotency::PhaseResult create_ride_phase(idempotency::PhaseContext& ctx, RideRun&) {
  const auto& key = ctx.key();
  auto params = from_json(key.request_params);
  if (!params) throw std::runtime_error("stored request_params of key " + std::to_string(key.id) + " are unreadable");
  return ctx.atomic([&](pqxx::work& tx) -> idempotency::PhaseResult {
    std::string ip = key.origin_ip.empty() ? "0.0.0.0" : key.origin_ip;
    tx.exec_prepared(ctx.prepare(kInsertRideWithAudit), key.id, format_coordinate(params->origin_lat),
                     format_coordinate(params->origin_lon), format_coordinate(params->target_lat),
                     format_coordinate(params->target_lon), key.user_id, key.request_params, ip);
    return idempotency::RecoveryPoint{kRideCreated};
  });
}

}  // namespace rr::rides
