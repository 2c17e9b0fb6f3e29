// The SQL of the ride phases, in one place so the benchmark can replay exactly what a request
// executes (bench/pgbench_script.cpp generates pgbench's script from these).
#pragma once

#include "common/db/connection_pool.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides::statements {

// Each statement calls the PL/pgSQL function of its own name (sql/003_request_functions.sql; the
// _v2 functions, which return the ride with cancelled_at and stripe_refund_id, are in
// sql/005_cancel_rides.sql).

// The ride and its audit record in one round trip.
//   $1 key id  $2 origin_lat  $3 origin_lon  $4 target_lat  $5 target_lon  $6 user id
//   $7 request params (jsonb, the audit data)  $8 origin ip
inline constexpr db::Statement kInsertRideWithAudit{
    "rides_insert_with_audit", "SELECT * FROM rides_insert_with_audit($1, $2, $3, $4, $5, $6, $7, $8)"};

// Records the charge on the ride and stages its receipt job in one round trip; returns the ride
// as the response shows it (ride_view_from), saving a read. No row: no ride for the key.
//   $1 key id  $2 charge id  $3 amount (cents)  $4 currency  $5 user id
inline constexpr db::Statement kRecordChargeAndStageReceipt{
    "rides_record_charge_and_stage_receipt_v2",
    "SELECT * FROM rides_record_charge_and_stage_receipt_v2($1, $2, $3, $4, $5)"};

// For keys that stopped at charge_created: stages the receipt for the already charged ride.
//   $1 key id  $2 amount (cents)  $3 currency  $4 user id
inline constexpr db::Statement kStageReceiptForKey{"rides_stage_receipt_for_key_v2",
                                                   "SELECT * FROM rides_stage_receipt_for_key_v2($1, $2, $3, $4)"};

}  // namespace rr::rides::statements
