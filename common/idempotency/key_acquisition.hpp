// Finding or creating a request's key and taking its lock: the first step of every request.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <variant>

#include "common/db/coalesced_calls.hpp"
#include "common/db/connection_pool.hpp"
#include "common/db/one_trip_call.hpp"
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

// A flow's first phase and the key's creation as one SQL call, one round trip: the
// function finds or creates the key as idem_find_or_create does and, only when it created it, runs
// the phase's work and moves the key to the phase's recovery point, all in the call's implicit
// transaction. Its first kCreatingCallKeyColumns columns are idem_find_or_create's (the recovery
// point being the key's after the phase); the phase's own columns follow (Acquired::carried).
// No row: a concurrent insert of the same key won, and begin_key asks again.
using CreatingCall =
    std::function<db::Call(const KeyRequest& request, const std::string& lock_token, double lock_timeout_seconds)>;
inline constexpr db::Row::size_type kCreatingCallKeyColumns = 12;

// What a creating call returned besides the key, for the phase after the one it ran (so that phase
// need not read it again). Empty when the run did not create the key with a creating call.
struct Carried {
  std::optional<db::Row> row;
  db::Row::size_type first_column = 0;
};

// We hold the key's lock (a fresh token), new or resumed.
struct Acquired {
  KeyRow key;
  bool created = false;
  std::unique_ptr<OpenSection> section;  // set only by begin_key, for a key it created without a creating call
  Carried carried;                       // set only by begin_key, for a key it created with one
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

// Finds or creates the request's key and takes its lock.
// With `creating` (the flow's first phase as a CreatingCall): one round trip finds the key, or
// creates it and runs that phase, committed; a replay also takes one round trip, and an
// unfinished key found free one more to lock it.
// Without: the lookup runs in a transaction that, when it creates the key, stays open in
// Acquired::section (holding `conn`) for the runner's first phase. Otherwise it is committed
// before returning: BEGIN, lookup, COMMIT for a replay, and one round trip more to lock an
// unfinished key found free.
AcquireResult begin_key(db::ConnectionPool::Lease conn, const KeyRequest& request,
                        std::chrono::milliseconds lock_timeout, const CreatingCall* creating = nullptr);

// Where begin_key gets its connections: `held`, a connection the caller checked out already (it
// authenticated the request with it), or else one from `acquire` when a round trip needs it. With
// `coalesced`, a creating call with a batch form goes through it (db::CoalescedCalls), so that
// concurrent requests' first phases share a round trip and a commit; no connection is held while
// the call waits for its batch.
struct KeyConnections {
  std::optional<db::ConnectionPool::Lease> held;
  std::function<db::ConnectionPool::Lease()> acquire;
  db::CoalescedCalls* coalesced = nullptr;
};
AcquireResult begin_key(KeyConnections connections, const KeyRequest& request, std::chrono::milliseconds lock_timeout,
                        const CreatingCall* creating);

// For the completer: locks an unfinished key by id when it is unlocked or its lock expired.
std::optional<KeyRow> acquire_key_by_id(db::ConnectionPool::Lease& conn, std::int64_t key_id,
                                        std::chrono::milliseconds lock_timeout);

// Releases our lock if we still hold it (fenced on the token); a no-op when it was taken over.
void unlock_key(db::ConnectionPool::Lease& conn, const KeyRow& key);

}  // namespace rr::idempotency
