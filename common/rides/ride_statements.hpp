// The SQL of the ride phases, in one place so the benchmark can replay exactly what a request
// executes (bench/pgbench_script.cpp generates pgbench's script from these).
#pragma once

#include "common/db/connection_pool.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides::statements {

// Each statement calls the PL/pgSQL function of its own name, defined in sql/functions/<name>.sql
// (the _v2 functions return the ride with cancelled_at and stripe_refund_id).

// The ride and its audit record in one round trip.
//   $1 key id  $2 origin_lat  $3 origin_lon  $4 target_lat  $5 target_lon  $6 user id
//   $7 request params (jsonb, the audit data)  $8 origin ip
inline constexpr db::Statement kInsertRideWithAudit{
    "rides_insert_with_audit", "SELECT * FROM rides_insert_with_audit($1, $2, $3, $4, $5, $6, $7, $8)"};

// The key's ride as the response shows it (ride_view_from); no row: no ride for the key. For a
// resumed charge, whose metadata names the ride (this run did not create it, so nothing carried it).
//   $1 key id
inline constexpr db::Statement kRideOfKey{"rides_view_of_key", "SELECT * FROM rides_view_of_key($1)"};

// For keys that stopped at charge_created: stages the receipt for the already charged ride.
//   $1 key id  $2 amount (cents)  $3 currency  $4 user id
inline constexpr db::Statement kStageReceiptForKey{"rides_stage_receipt_for_key_v2",
                                                   "SELECT * FROM rides_stage_receipt_for_key_v2($1, $2, $3, $4)"};

// The flow's phases as one-round-trip calls (db::call, common/db/one_trip_call.hpp): the name of
// the function each calls, its arguments in order beside it.

// The first phase of a new ride: finds the key, or creates it locked by us at ride_created
// together with its ride and the ride's audit record.
//   1 user_id  2 idempotency_key  3 method  4 path  5 params (jsonb)  6 origin ip ('' = none)
//   7 lock token (uuid)  8 lock timeout in seconds  9 origin_lat  10 origin_lon  11 target_lat
//   12 target_lon (numeric, as the client sent them)  13 the charge's provider idempotency key
// Returns: inserted, the key row (key_row_from), same_request, locked, then the ride as the
// response shows it (its columns NULL when the key was found, not created).
inline constexpr char kCreateWithKey[] = "rides_create_with_key";
// Its batch form (sql/functions/rides_create_with_keys.sql): every argument an array, one element
// per request; per request answered, its ordinal, a NULL SQLSTATE, then the columns above. No row
// for a request it leaves to the single function (its key named twice, or committed meanwhile).
inline constexpr char kCreateWithKeys[] = "rides_create_with_keys";

// The charge phase's commit, for a new key and a resumed one alike: records the charge on the ride
// and in the provider ledger, stages its receipt and finishes the key with the response, fenced on
// our lock (raises RR001 when it was taken over, RR002 when the key has no ride, 23505 when the
// ledger already holds a charge for the ride or this charge elsewhere).
//   1 key id  2 our lock token  3 charge id  4 amount (cents)  5 currency  6 user id
//   7 response code  8 response body
// Returns: nothing (void).
inline constexpr char kRecordChargeAndFinish[] = "rides_record_charge_and_finish";
// Its batch form (sql/functions/rides_record_charges_and_finish.sql): every argument an array, one
// element per request; one row per request, its ordinal and the SQLSTATE it failed with or NULL.
inline constexpr char kRecordChargesAndFinish[] = "rides_record_charges_and_finish";

}  // namespace rr::rides::statements
