// The SQL of key acquisition and of the runner's fence, in one place so the benchmark can replay
// exactly what a request executes (bench/pgbench_script.cpp generates pgbench's script from these).
#pragma once

#include "common/db/connection_pool.hpp"
#include "common/idempotency/key_row.hpp"

namespace rr::idempotency::statements {

// Reads the existing key and, only when there is none, inserts it already locked by us. A
// concurrent insert of the same key makes ours DO NOTHING while our snapshot cannot see theirs:
// both halves come back empty and the caller simply asks again.
//   $1 user_id  $2 idempotency_key  $3 method  $4 path  $5 params (jsonb)  $6 origin ip ('' = none)
//   $7 lock token (uuid)  $8 lock timeout in seconds
// Returns: inserted, RR_KEY_ROW_COLUMNS, same_request, locked.
inline constexpr db::Statement kFindOrCreate{
    "idem_find_or_create",
    "WITH existing AS ("
    "  SELECT " RR_KEY_ROW_COLUMNS
    ",   request_method = $3 AND request_path = $4 AND request_params = $5::jsonb AS same_request,"
    "    locked_at IS NOT NULL AND locked_at >= now() - make_interval(secs => $8) AS locked"
    "  FROM idempotency_keys WHERE user_id = $1 AND idempotency_key = $2"
    "), inserted AS ("
    "  INSERT INTO idempotency_keys (user_id, idempotency_key, request_method, request_path, request_params,"
    "                                origin_ip, recovery_point, locked_at, lock_token)"
    "  SELECT $1, $2, $3, $4, $5::jsonb, NULLIF($6, '')::inet, 'started', now(), $7::uuid"
    "  WHERE NOT EXISTS (SELECT 1 FROM existing)"
    "  ON CONFLICT (user_id, idempotency_key) DO NOTHING"
    "  RETURNING " RR_KEY_ROW_COLUMNS
    ") "
    "SELECT true, *, true, false FROM inserted UNION ALL SELECT false, * FROM existing"};

//   $1 key id  $2 new lock token  $3 lock timeout in seconds
inline constexpr db::Statement kLockById{
    "idem_lock_by_id",
    "UPDATE idempotency_keys SET locked_at = now(), lock_token = $2::uuid, last_run_at = now() "
    "WHERE id = $1 AND recovery_point <> 'finished' "
    "  AND (locked_at IS NULL OR locked_at < now() - make_interval(secs => $3)) "
    "RETURNING " RR_KEY_ROW_COLUMNS};

//   $1 key id  $2 our lock token
inline constexpr db::Statement kUnlock{
    "idem_unlock",
    "UPDATE idempotency_keys SET locked_at = NULL, lock_token = NULL WHERE id = $1 AND lock_token = $2::uuid"};

// The fence is the last statement of every phase transaction and applies the phase's result to
// the key in the same round trip: if another process took the lock over, no row matches, the
// transaction rolls back (the phase's writes with it) and the runner stops. Under READ COMMITTED
// the UPDATE re-checks the token on the newest row version, so a takeover that committed
// meanwhile is always seen.
//   $1 key id  $2 our lock token
inline constexpr db::Statement kFence{
    "idem_fence",
    "UPDATE idempotency_keys SET last_run_at = now() WHERE id = $1 AND lock_token = $2::uuid RETURNING id"};
//   $1 key id  $2 our lock token  $3 new recovery point
inline constexpr db::Statement kMoveRecoveryPoint{
    "idem_move_recovery_point",
    "UPDATE idempotency_keys SET recovery_point = $3, last_run_at = now() "
    "WHERE id = $1 AND lock_token = $2::uuid RETURNING id"};
//   $1 key id  $2 our lock token  $3 response code  $4 response body
inline constexpr db::Statement kFinish{"idem_finish",
                                       "UPDATE idempotency_keys SET recovery_point = 'finished', response_code = $3, "
                                       "response_body = $4, locked_at = NULL, lock_token = NULL, last_run_at = now() "
                                       "WHERE id = $1 AND lock_token = $2::uuid RETURNING id"};

}  // namespace rr::idempotency::statements
