// The SQL of the cancel flow's phases. Each statement calls the PL/pgSQL function of its own name
// (sql/functions/<name>.sql).
#pragma once

#include "common/db/connection_pool.hpp"

namespace rr::rides::statements {

// Where the user's ride stands (state, then the ride as RR_RIDE_VIEW_COLUMNS); a ride whose
// request finished without a charge is cancelled there and then. No row: no such ride of theirs.
//   $1 ride id  $2 user id  $3 reason (null: none)  $4 currency  $5 audit data (jsonb)  $6 origin ip
inline constexpr db::Statement kCancelBegin{"rides_cancel_begin",
                                            "SELECT * FROM rides_cancel_begin($1, $2, $3, $4, $5, $6)"};

// The ride's charge (and its stored refund idempotency key, which the refund no longer reads); no
// row when the ride has no charge.
//   $1 ride id  $2 user id
inline constexpr db::Statement kRefundTarget{"rides_refund_target", "SELECT * FROM rides_refund_target($1, $2)"};

// Stores the refund's derived provider key on the ride, and the first cancel request's key and
// parameters beside it; returns those (the refund's metadata on every attempt, by any request).
//   $1 ride id  $2 user id  $3 refund idempotency key  $4 the cancel's Idempotency-Key
//   $5 its request params (jsonb)
// Returns: refund_request_key, refund_request_params (JSON text).
inline constexpr db::Statement kStoreRefundKey{"rides_store_refund_key",
                                               "SELECT * FROM rides_store_refund_key($1, $2, $3, $4, $5)"};

// Cancels the ride with its refund (unless it already is), stages the cancellation receipt and
// the audit record once; returns the ride.
//   $1 ride id  $2 user id  $3 refund id  $4 reason  $5 amount (cents)  $6 currency  $7 audit data
//   $8 origin ip
inline constexpr db::Statement kRecordRefund{"rides_record_refund",
                                             "SELECT * FROM rides_record_refund($1, $2, $3, $4, $5, $6, $7, $8)"};

}  // namespace rr::rides::statements
