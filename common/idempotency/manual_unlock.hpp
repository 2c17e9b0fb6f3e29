// `keys unlock`: an operator releases a key's lock by hand, fenced on the lock's token exactly as
// a runner releases its own (statements::kUnlock), and never over a live lock unless forced.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "common/db/connection_pool.hpp"
#include "common/idempotency/key_inspection.hpp"

namespace rr::idempotency {

struct ManualUnlock {
  enum class Result {
    unlocked,    // the lock we saw is released; the next retry or completer pass resumes the key
    not_locked,  // no lock to release (finished, or already released): nothing done
    not_found,   // no key with that id
    refused,     // the lock is live and force was not given, or it has no token to fence on: nothing done
    changed,     // the lock changed hands (released, finished, taken over) while we looked: nothing done
  };
  Result result = Result::not_found;
  // The key as it was before anything was done (unset when not found).
  std::optional<KeyDetails> before;
  bool forced = false;  // a live lock was released because force was given
};

// Reads the key and, if its lock may be released, releases exactly the lock it read: a runner
// that took the key over meanwhile holds another token, which the fence leaves alone. Releasing a
// live lock (force) makes the runner that holds it fail its next fence and stop, its phase rolled
// back; the provider sees any repeated charge under the key's own payment idempotency key.
ManualUnlock unlock_by_hand(db::PooledConnection& conn, std::int64_t id, std::chrono::milliseconds lock_timeout,
                            bool force);

}  // namespace rr::idempotency
