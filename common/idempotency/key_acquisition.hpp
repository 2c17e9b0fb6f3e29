// Finding or creating a request's key and taking its lock: the first step of every request.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <variant>

#include "common/db/connection_pool.hpp"
#include "common/db/transaction.hpp"
#include "common/idempotency/key_row.hpp"

namespace rr::idempotency {

struct KeyRequest {
  std::int64_t user_id = 0;
  std::string idempotency_key;
  std::string method;       // "POST"
  std::string path;         // "/rides"
  std::string params_json;  // the parsed parameters, compared by value (as JSONB) with a stored key's
  std::string origin_ip;    // "" when unknown
};

// The still-open transaction that created a key (begin_key). The runner continues it for the
// flow's first phase, so a new key and that phase's work commit together: one commit fewer per
// request, and a key never exists without its first phase's work. Destroying it rolls back (the
// transaction is declared after the lease, so it ends before the connection goes back).
struct OpenSection {
  explicit OpenSection(db::ConnectionPool::Lease conn)
      : lease(std::move(conn)), tx(lease.conn(), lease.statement_timeout()) {}
  db::ConnectionPool::Lease lease;
  db::Transaction tx;
};

// We hold the key's lock (a fresh token), new or resumed.
struct Acquired {
  KeyRow key;
  bool created = false;
  std::unique_ptr<OpenSection> section;  // set only by begin_key, for a key it created
};
// The key already finished: answer with exactly what was stored.
struct Replay {
  int status = 0;
  std::string body;
};
// Another request holds the key's lock and it has not expired: 409.
struct InFlight {};
// The key was used for a different method, path or parameters: 422.
struct Mismatch {};

using AcquireResult = std::variant<Acquired, Replay, InFlight, Mismatch>;

// Finds or creates the request's key and takes its lock. The lookup runs in a transaction that,
// when it creates the key, stays open in Acquired::section (holding `conn`) for the runner.
// Otherwise it is committed before returning: BEGIN, lookup, COMMIT for a replay, and one more
// statement to lock an unfinished key found free.
AcquireResult begin_key(db::ConnectionPool::Lease conn, const KeyRequest& request,
                        std::chrono::milliseconds lock_timeout);

// For the completer: locks an unfinished key by id when it is unlocked or its lock expired.
std::optional<KeyRow> acquire_key_by_id(db::ConnectionPool::Lease& conn, std::int64_t key_id,
                                        std::chrono::milliseconds lock_timeout);

// Releases our lock if we still hold it (fenced on the token); a no-op when it was taken over.
void unlock_key(db::ConnectionPool::Lease& conn, const KeyRow& key);

}  // namespace rr::idempotency
