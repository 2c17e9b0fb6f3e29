// The SQL of the ride phases, in one place so the benchmark can replay exactly what a request
// executes (bench/pgbench_script.cpp generates pgbench's script from these).
#pragma once

#include "common/db/connection_pool.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides::statements {

// The ride and its audit record in one round trip.
//   $1 key id  $2 origin_lat  $3 origin_lon  $4 target_lat  $5 target_lon  $6 user id
//   $7 request params (jsonb, the audit data)  $8 origin ip
inline constexpr db::Statement kInsertRideWithAudit{
    "rides_insert_with_audit",
    "WITH ride AS ("
    "  INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id)"
    "  VALUES ($1, $2, $3, $4, $5, $6) RETURNING id"
    ") "
    "INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id) "
    "SELECT 'create_ride', $7::jsonb, $8::cidr, ride.id, 'ride', $6 FROM ride RETURNING resource_id"};

// Records the charge on the ride and stages its receipt job in one round trip; returns the ride
// as the response shows it (RR_RIDE_VIEW_COLUMNS), saving a read. No row: no ride for the key.
//   $1 key id  $2 charge id  $3 amount (cents)  $4 currency  $5 user id
inline constexpr db::Statement kRecordChargeAndStageReceipt{
    "rides_record_charge_and_stage_receipt",
    "WITH ride AS ("
    "  UPDATE rides SET stripe_charge_id = $2 WHERE idempotency_key_id = $1 RETURNING " RR_RIDE_VIEW_COLUMNS
    "), job AS ("
    "  INSERT INTO staged_jobs (job_name, job_args) "
    "  SELECT 'send_ride_receipt', jsonb_build_array(jsonb_build_object("
    "    'amount', $3::bigint, 'currency', $4::text, 'user_id', $5::bigint, 'ride_id', ride.id)) FROM ride"
    ") "
    "SELECT * FROM ride"};

// For keys that stopped at charge_created: stages the receipt for the already charged ride.
//   $1 key id  $2 amount (cents)  $3 currency  $4 user id
inline constexpr db::Statement kStageReceiptForKey{
    "rides_stage_receipt_for_key",
    "WITH ride AS ("
    "  SELECT " RR_RIDE_VIEW_COLUMNS
    " FROM rides WHERE idempotency_key_id = $1"
    "), job AS ("
    "  INSERT INTO staged_jobs (job_name, job_args) "
    "  SELECT 'send_ride_receipt', jsonb_build_array(jsonb_build_object("
    "    'amount', $2::bigint, 'currency', $3::text, 'user_id', $4::bigint, 'ride_id', ride.id)) FROM ride"
    ") "
    "SELECT * FROM ride"};

}  // namespace rr::rides::statements
