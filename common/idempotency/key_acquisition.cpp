// Key upsert and lock acquisition, fenced by a fresh token per acquisition.
#include "common/idempotency/key_acquisition.hpp"

#include "common/base/random.hpp"
#include "common/db/sql_seconds.hpp"
#include "common/fiber/fiber.hpp"
#include "common/idempotency/key_statements.hpp"

namespace rr::idempotency {
namespace {

// What one find-or-create lookup found, before any relock.
struct Lookup {
  AcquireResult answer;
  std::optional<std::int64_t> resume_id;  // an unfinished, unlocked key: lock it by id
};

// Reads a row of idem_find_or_create's shape from column `first` (a creating call's starts with it).
Lookup settle(const db::Row& row, db::Row::size_type first = 0) {
  bool inserted = row[first].as<bool>();
  KeyRow key = key_row_from(row, first + 1);
  if (inserted) return {Acquired{std::move(key), true, nullptr, {}}, std::nullopt};
  bool same_request = row[first + 10].as<bool>();
  bool locked = row[first + 11].as<bool>();
  if (!same_request) return {Mismatch{}, std::nullopt};
  if (key.recovery_point == kFinished && key.response_code && key.response_body) {
    return {Replay{*key.response_code, *key.response_body}, std::nullopt};
  }
  if (locked) return {InFlight{}, std::nullopt};
  return {InFlight{}, key.id};
}

// Runs kFindOrCreate in `tx` until it settles (each lost race means the other side committed,
// which the next READ COMMITTED statement sees).
Lookup find_or_create(pqxx::transaction_base& tx, db::ConnectionPool::Lease& conn, const KeyRequest& request,
                      std::chrono::milliseconds lock_timeout) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::string token = random_uuid();
    auto rows = conn.exec(tx, statements::kFindOrCreate, request.user_id, request.idempotency_key, request.method,
                          request.path, request.params_json, request.origin_ip, token, db::seconds_of(lock_timeout));
    if (!rows.empty()) return settle(rows[0]);
  }
  return {InFlight{}, std::nullopt};
}

// The connection to run a round trip on: the one held, or a new one.
db::ConnectionPool::Lease& connection(KeyConnections& connections) {
  if (!connections.held) {
    if (!connections.acquire) throw std::logic_error("begin_key has no connection to use");
    connections.held.emplace(connections.acquire());
  }
  return *connections.held;
}

// The same with a creating call: each attempt is its own committed round trip, alone or in a
// batch of concurrent requests' (db::CoalescedCalls).
Lookup create_with_call(KeyConnections& connections, const KeyRequest& request, std::chrono::milliseconds lock_timeout,
                        const CreatingCall& creating) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto call = creating(request, random_uuid(), db::seconds_of(lock_timeout));
    db::CoalescedCalls::Answer answer;
    if (connections.coalesced && !call.batch_function.empty() && connections.acquire) {
      connections.held.reset();  // back to the pool while the call waits for its batch
      answer = connections.coalesced->run(call, connections.acquire);
    } else {
      auto rows = db::run_one_trip(connection(connections), call);
      answer.rows.assign(rows.begin(), rows.end());
    }
    if (answer.rows.empty()) continue;
    const db::Row& row = answer.rows.front();
    Lookup lookup = settle(row, answer.first_column);
    if (auto* acquired = std::get_if<Acquired>(&lookup.answer)) {
      acquired->key.idempotency_key = request.idempotency_key;
      acquired->carried = Carried{row, answer.first_column + kCreatingCallKeyColumns};
    }
    return lookup;
  }
  return {InFlight{}, std::nullopt};
}

}  // namespace

std::optional<KeyRow> acquire_key_by_id(db::ConnectionPool::Lease& conn, std::int64_t key_id,
                                        std::chrono::milliseconds lock_timeout) {
  auto rows =
      db::run_one_trip(conn, db::call(statements::kLockById.name, key_id, random_uuid(), db::seconds_of(lock_timeout)));
  if (rows.empty()) return std::nullopt;
  KeyRow key = key_row_from(rows[0]);
  key.idempotency_key = rows[0][kKeyRowColumns].as<std::string>();
  return key;
}

AcquireResult begin_key(db::ConnectionPool::Lease conn, const KeyRequest& request,
                        std::chrono::milliseconds lock_timeout, const CreatingCall* creating) {
  return begin_key(KeyConnections{std::move(conn), nullptr, nullptr}, request, lock_timeout, creating);
}

AcquireResult begin_key(KeyConnections connections, const KeyRequest& request, std::chrono::milliseconds lock_timeout,
                        const CreatingCall* creating) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    Lookup lookup;
    if (creating) {
      lookup = create_with_call(connections, request, lock_timeout, *creating);
      if (std::holds_alternative<Acquired>(lookup.answer)) return std::move(lookup.answer);
    } else {
      auto& conn = connection(connections);
      // A libpqxx transaction blocks: on a request fiber it runs on a worker while the fiber waits.
      bool created = fiber::blocking([&] {
        auto section = std::make_unique<OpenSection>(std::move(conn));
        lookup = find_or_create(section->tx, section->lease, request, lock_timeout);
        if (auto* acquired = std::get_if<Acquired>(&lookup.answer)) {
          acquired->key.idempotency_key = request.idempotency_key;
          acquired->section = std::move(section);
          return true;
        }
        // Nothing was written: end the read-only transaction and keep the connection.
        section->tx.commit();
        conn = std::move(section->lease);
        return false;
      });
      if (created) return std::move(lookup.answer);
    }
    if (!lookup.resume_id) return std::move(lookup.answer);
    // Resume the unfinished key. If someone else took or finished it meanwhile, that request is
    // in flight or done, and asking again settles which.
    if (auto relocked = acquire_key_by_id(connection(connections), *lookup.resume_id, lock_timeout)) {
      return Acquired{std::move(*relocked), false, nullptr, {}};
    }
  }
  return InFlight{};
}

void unlock_key(db::ConnectionPool::Lease& conn, const KeyRow& key) {
  if (key.lock_token.empty()) return;
  db::run_one_trip(conn, db::call(statements::kUnlock.name, key.id, key.lock_token));
}

}  // namespace rr::idempotency
