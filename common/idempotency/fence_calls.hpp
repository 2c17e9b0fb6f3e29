// The runner's fences as one-round-trip calls, for phases whose section is nothing but the fence
// (PhaseContext::atomic_call; the functions are in sql/functions/).
#pragma once

#include "common/db/one_trip_call.hpp"
#include "common/idempotency/key_row.hpp"
#include "common/idempotency/key_statements.hpp"
#include "common/idempotency/phase.hpp"

namespace rr::idempotency {

// Stores `result` on the key, finishes it and releases our lock; raises RR001 if the lock is gone.
inline db::Call finish_call(const KeyRow& key, const FinalResult& result) {
  return db::call(statements::kFinishOrRaise, key.id, key.lock_token, result.code, result.body);
}

}  // namespace rr::idempotency
