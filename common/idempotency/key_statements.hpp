// The SQL of key acquisition and of the runner's fence, in one place so the benchmark can replay
// exactly what a request executes (bench/pgbench_script.cpp generates pgbench's script from these).
#pragma once

#include "common/db/connection_pool.hpp"
#include "common/idempotency/key_row.hpp"

namespace rr::idempotency::statements {

// Each statement calls the PL/pgSQL function of its own name (sql/functions/<name>.sql holds the
// SQL; sql/003_request_functions.sql says why functions): PostgreSQL keeps the plans of a
// function's statements per server session, so through a transaction-pooling PgBouncer, with
// prepared statements off, it plans only the call.

// Reads the existing key and, only when there is none, inserts it already locked by us. A
// concurrent insert of the same key makes ours DO NOTHING while our snapshot cannot see theirs:
// both halves come back empty and the caller simply asks again.
//   $1 user_id  $2 idempotency_key  $3 method  $4 path  $5 params (jsonb)  $6 origin ip ('' = none)
//   $7 lock token (uuid)  $8 lock timeout in seconds
// Returns: inserted, the key row (key_row_from), same_request, locked.
inline constexpr db::Statement kFindOrCreate{"idem_find_or_create",
                                             "SELECT * FROM idem_find_or_create($1, $2, $3, $4, $5, $6, $7, $8)"};

// Locks an unfinished key whose lock is free or expired. Returns the key row (key_row_from) and
// then the client's Idempotency-Key, or nothing.
//   $1 key id  $2 new lock token  $3 lock timeout in seconds
inline constexpr db::Statement kLockById{"idem_lock_by_id", "SELECT * FROM idem_lock_by_id($1, $2, $3)"};

//   $1 key id  $2 our lock token
inline constexpr db::Statement kUnlock{"idem_unlock", "SELECT * FROM idem_unlock($1, $2)"};

// The fence is the last statement of every phase transaction and applies the phase's result to
// the key in the same round trip: if another process took the lock over, no row comes back, the
// transaction rolls back (the phase's writes with it) and the runner stops. Under READ COMMITTED
// the UPDATE inside re-checks the token on the newest row version, so a takeover that committed
// meanwhile is always seen.
//   $1 key id  $2 our lock token
inline constexpr db::Statement kFence{"idem_fence", "SELECT * FROM idem_fence($1, $2)"};
//   $1 key id  $2 our lock token  $3 new recovery point
inline constexpr db::Statement kMoveRecoveryPoint{"idem_move_recovery_point",
                                                  "SELECT * FROM idem_move_recovery_point($1, $2, $3)"};
//   $1 key id  $2 our lock token  $3 response code  $4 response body
inline constexpr db::Statement kFinish{"idem_finish", "SELECT * FROM idem_finish($1, $2, $3, $4)"};

// The runner's finish as a one-round-trip call (db::call, common/idempotency/fence_calls.hpp):
// stores the result on the key, finishes it and releases our lock; raises RR001 when the lock is
// no longer ours.
//   1 key id  2 our lock token  3 response code  4 response body
// Returns: nothing (void).
inline constexpr char kFinishOrRaise[] = "idem_finish_or_raise";

}  // namespace rr::idempotency::statements
