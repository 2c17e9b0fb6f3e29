// What operators read about idempotency keys (`keys show`, `keys list --unfinished`): a key's
// recovery point, lock, attempts and stored status, read in one short read-only transaction.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/db/connection_pool.hpp"

namespace rr::idempotency {

enum class LockState {
  none,     // locked_at is NULL: anyone may take the key
  live,     // taken less than IDEMPOTENCY_KEY_LOCK_TIMEOUT ago: a request or the completer may hold it
  expired,  // taken longer ago: the next request or completer pass takes it over
};
const char* lock_state_name(LockState state);

// Timestamps are RFC 3339 in UTC with milliseconds; ages are seconds before the database's now().
struct KeyDetails {
  std::int64_t id = 0;
  std::int64_t user_id = 0;
  std::string email;
  std::string idempotency_key;
  std::string request_method;
  std::string request_path;
  std::string recovery_point;
  std::string created_at;
  double age_seconds = 0;
  std::string last_run_at;
  double since_last_run_seconds = 0;
  std::optional<std::string> locked_at;
  LockState lock = LockState::none;
  // locked_at + IDEMPOTENCY_KEY_LOCK_TIMEOUT - now(): negative once expired; unset when unlocked.
  std::optional<double> lock_expires_in_seconds;
  // The fencing token of the lock, for `keys unlock` to fence on; never printed.
  std::string lock_token;
  // Counted by the completer's failed re-drives (a client's own retries do not count).
  int attempts = 0;
  std::optional<std::string> last_error;
  std::optional<int> response_code;
  // Only when asked for: the stored answer belongs to the key's user.
  std::optional<std::string> response_body;
  std::string payment_idempotency_key;
};

struct KeyLookup {
  bool user_found = false;
  std::optional<KeyDetails> key;
  // When the key is gone but the reaper archived it unfinished: when (see `archive list`).
  std::optional<std::string> archived_at;
};

struct UnfinishedKeys {
  std::vector<KeyDetails> keys;  // oldest first, at most the limit
  std::int64_t total = 0;        // how many match, limit or not
};

// `conn` is one session of the subcommand; every statement runs in its statement mode, so these
// work through a transaction-pooling PgBouncer (DATABASE_PREPARED_STATEMENTS=off) too.
KeyLookup find_key(db::PooledConnection& conn, const std::string& email, const std::string& idempotency_key,
                   std::chrono::milliseconds lock_timeout, bool with_body);
std::optional<KeyDetails> find_key_by_id(db::PooledConnection& conn, std::int64_t id,
                                         std::chrono::milliseconds lock_timeout, bool with_body);
// Unfinished keys created more than `older_than` ago: what the completer will pick up or is
// failing to finish.
UnfinishedKeys list_unfinished_keys(db::PooledConnection& conn, std::chrono::milliseconds older_than,
                                    std::int64_t limit, std::chrono::milliseconds lock_timeout);

}  // namespace rr::idempotency
