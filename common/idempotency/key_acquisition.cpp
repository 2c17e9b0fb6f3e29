// Key upsert and lock acquisition, fenced by a fresh token per acquisition.
#include "common/idempotency/key_acquisition.hpp"

#include "common/base/random.hpp"

namespace rr::idempotency {
namespace {

// Reads the existing key and, only when there is none, inserts it already locked by us. A
// concurrent insert of the same key makes ours DO NOTHING while our snapshot cannot see theirs:
// both halves come back empty and the caller simply asks again.
const db::Statement kFindOrCreate{
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

const db::Statement kLockById{
    "idem_lock_by_id",
    "UPDATE idempotency_keys SET locked_at = now(), lock_token = $2::uuid, last_run_at = now() "
    "WHERE id = $1 AND recovery_point <> 'finished' "
    "  AND (locked_at IS NULL OR locked_at < now() - make_interval(secs => $3)) "
    "RETURNING " RR_KEY_ROW_COLUMNS};

const db::Statement kUnlock{
    "idem_unlock",
    "UPDATE idempotency_keys SET locked_at = NULL, lock_token = NULL WHERE id = $1 AND lock_token = $2::uuid"};

double seconds_of(std::chrono::milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

}  // namespace

std::optional<KeyRow> acquire_key_by_id(db::ConnectionPool::Lease& conn, std::int64_t key_id,
                                        std::chrono::milliseconds lock_timeout) {
  std::string token = random_uuid();
  pqxx::nontransaction tx(conn.conn());
  auto rows = tx.exec_prepared(conn.prepare(kLockById), key_id, token, seconds_of(lock_timeout));
  if (rows.empty()) return std::nullopt;
  return key_row_from(rows[0]);
}

AcquireResult acquire_key(db::ConnectionPool::Lease& conn, const KeyRequest& request,
                          std::chrono::milliseconds lock_timeout) {
  // A handful of passes settles any race: each lost race means the other side has committed.
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::string token = random_uuid();
    pqxx::result rows;
    {
      pqxx::nontransaction tx(conn.conn());
      rows = tx.exec_prepared(conn.prepare(kFindOrCreate), request.user_id, request.idempotency_key, request.method,
                              request.path, request.params_json, request.origin_ip, token, seconds_of(lock_timeout));
    }
    if (rows.empty()) continue;
    const auto& row = rows[0];
    bool inserted = row[0].as<bool>();
    KeyRow key = key_row_from(row, 1);
    if (inserted) return Acquired{std::move(key), true};
    bool same_request = row[10].as<bool>();
    bool locked = row[11].as<bool>();
    if (!same_request) return Mismatch{};
    if (key.recovery_point == kFinished && key.response_code && key.response_body) {
      return Replay{*key.response_code, *key.response_body};
    }
    if (locked) return InFlight{};
    if (auto relocked = acquire_key_by_id(conn, key.id, lock_timeout)) return Acquired{std::move(*relocked), false};
    // Someone else took the lock or finished the key between our two statements: look again.
  }
  return InFlight{};
}

void unlock_key(db::ConnectionPool::Lease& conn, const KeyRow& key) {
  if (key.lock_token.empty()) return;
  pqxx::nontransaction tx(conn.conn());
  tx.exec_prepared(conn.prepare(kUnlock), key.id, key.lock_token);
}

}  // namespace rr::idempotency
