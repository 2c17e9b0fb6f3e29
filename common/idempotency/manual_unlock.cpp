// The hand unlock: read, decide, then the runner's own fenced release of the token that was read.
#include "common/idempotency/manual_unlock.hpp"

#include "common/db/transaction.hpp"
#include "common/idempotency/key_statements.hpp"

namespace rr::idempotency {

ManualUnlock unlock_by_hand(db::PooledConnection& conn, std::int64_t id, std::chrono::milliseconds lock_timeout,
                            bool force) {
  ManualUnlock outcome;
  outcome.before = find_key_by_id(conn, id, lock_timeout, /*with_body=*/false);
  if (!outcome.before) return outcome;
  const KeyDetails& key = *outcome.before;
  if (key.lock == LockState::none) {
    outcome.result = ManualUnlock::Result::not_locked;
    return outcome;
  }
  if (key.lock == LockState::live && !force) {
    outcome.result = ManualUnlock::Result::refused;
    return outcome;
  }
  // A lock without a token cannot be fenced (nothing in this suite writes one; a row inserted by
  // hand gets locked_at's default): it is left to expire rather than released blind, even forced.
  if (key.lock_token.empty()) {
    outcome.result = ManualUnlock::Result::refused;
    return outcome;
  }
  db::Transaction tx(conn.raw(), conn.statement_timeout());
  auto released = conn.statements().exec(tx, statements::kUnlock, id, key.lock_token);
  tx.commit();
  if (released.affected_rows() == 0) {
    outcome.result = ManualUnlock::Result::changed;
    return outcome;
  }
  outcome.result = ManualUnlock::Result::unlocked;
  outcome.forced = key.lock == LockState::live;
  return outcome;
}

}  // namespace rr::idempotency
