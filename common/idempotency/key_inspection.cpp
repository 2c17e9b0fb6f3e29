// The read side of the operator's key commands: one statement per question, each in a short
// transaction, with lock liveness judged by the database's clock exactly as acquisition judges it.
#include "common/idempotency/key_inspection.hpp"
#include "common/db/sql_seconds.hpp"

#include "common/db/sql_timestamps.hpp"
#include "common/db/transaction.hpp"

namespace rr::idempotency {
namespace {

// Every statement below binds $1 = IDEMPOTENCY_KEY_LOCK_TIMEOUT in seconds and $2 = whether to
// return the stored body, and joins idempotency_keys k and users u; what a key's flow wrote is
// the flow's (the key commands read a key's ride themselves). "live" is
// spelled as kFindOrCreate spells it, so an operator sees the lock the way a request would.
// A finished key stored without its body (sql/013) shows the body every replay renders, by the
// renderer the key names (idem_stored_answer, sql/019).
#define RR_KEY_DETAIL_COLUMNS \
  "k.id, k.user_id, u.email, k.idempotency_key, k.request_method, k.request_path, k.recovery_point, " \
  RR_SQL_UTC_TEXT("k.created_at") ", extract(epoch FROM now() - k.created_at)::float8, " RR_SQL_UTC_TEXT(                  \
      "k.last_run_at") ", extract(epoch FROM now() - k.last_run_at)::float8, " RR_SQL_UTC_TEXT("k.locked_at")    \
  ", k.locked_at IS NOT NULL AND k.locked_at >= now() - make_interval(secs => $1), "                     \
  "extract(epoch FROM k.locked_at + make_interval(secs => $1) - now())::float8, "                        \
  "k.lock_token::text, k.attempts, k.last_error, k.response_code, "                                      \
  "CASE WHEN $2::boolean THEN COALESCE(k.response_body, CASE WHEN k.response_code IS NOT NULL THEN "        \
  "idem_stored_answer(k.id, k.response_renderer) END) END, k.payment_idempotency_key"
constexpr int kDetailColumns = 20;

// $3 email  $4 idempotency key. One row when the user exists; the key's columns are NULL when it
// does not, and then the last column says whether (and when) the reaper archived it.
const db::Statement kFindKey{
    "ops_find_key",
    "SELECT " RR_KEY_DETAIL_COLUMNS ", u.id, "
    "  (SELECT " RR_SQL_UTC_TEXT("max(a.archived_at)") " FROM idempotency_keys_archive a"
    "   WHERE k.id IS NULL AND a.user_id = u.id AND a.idempotency_key = $4) "
    "FROM users u LEFT JOIN idempotency_keys k ON k.user_id = u.id AND k.idempotency_key = $4 "
    "WHERE u.email = $3"};

// $3 key id
const db::Statement kFindKeyById{"ops_find_key_by_id",
                                 "SELECT " RR_KEY_DETAIL_COLUMNS
                                 " FROM idempotency_keys k JOIN users u ON u.id = k.user_id WHERE k.id = $3"};

// Where unfinished keys can be (sql/012): at or above the completer's floor, or among the keys
// that failed a completer attempt (the partial index idempotency_keys_retried, spelled as its
// predicate). A key below the floor whose first commit came minutes late is not listed until the
// completer's sweep has met it.
#define RR_MAYBE_UNFINISHED                                                                         \
  "(k.id >= (SELECT COALESCE(max(s.floor_id), 0) FROM idempotency_keys_scan s) OR k.attempts > 0) " \
  "AND k.response_code IS NULL"

// $3 minimum age in seconds  $4 limit
const db::Statement kListUnfinished{"ops_list_unfinished", "SELECT " RR_KEY_DETAIL_COLUMNS
                                                           " FROM idempotency_keys k JOIN users u ON u.id = k.user_id "
                                                           "WHERE " RR_MAYBE_UNFINISHED
                                                           " AND k.created_at <= now() - make_interval(secs => $3) "
                                                           "ORDER BY k.id LIMIT $4"};

// $1 minimum age in seconds
const db::Statement kCountUnfinished{"ops_count_unfinished",
                                     "SELECT count(*) FROM idempotency_keys k "
                                     "WHERE " RR_MAYBE_UNFINISHED
                                     " AND k.created_at <= now() - make_interval(secs => $1)"};
#undef RR_MAYBE_UNFINISHED

template <typename T>
std::optional<T> optional_of(const db::Field& field) {
  if (field.is_null()) return std::nullopt;
  return field.as<T>();
}

KeyDetails key_details_from(const db::Row& row) {
  KeyDetails key;
  key.id = row[0].as<std::int64_t>();
  key.user_id = row[1].as<std::int64_t>();
  key.email = row[2].as<std::string>();
  key.idempotency_key = row[3].as<std::string>();
  key.request_method = row[4].as<std::string>();
  key.request_path = row[5].as<std::string>();
  key.recovery_point = row[6].as<std::string>();
  key.created_at = row[7].as<std::string>();
  key.age_seconds = row[8].as<double>();
  key.last_run_at = row[9].as<std::string>();
  key.since_last_run_seconds = row[10].as<double>();
  key.locked_at = optional_of<std::string>(row[11]);
  if (key.locked_at) key.lock = row[12].as<bool>() ? LockState::live : LockState::expired;
  key.lock_expires_in_seconds = optional_of<double>(row[13]);
  key.lock_token = row[14].is_null() ? "" : row[14].as<std::string>();
  key.attempts = row[15].as<int>();
  key.last_error = optional_of<std::string>(row[16]);
  key.response_code = optional_of<int>(row[17]);
  key.response_body = optional_of<std::string>(row[18]);
  key.payment_idempotency_key = row[19].as<std::string>();
  return key;
}

}  // namespace

const char* lock_state_name(LockState state) {
  switch (state) {
    case LockState::live:
      return "live";
    case LockState::expired:
      return "expired";
    case LockState::none:
      break;
  }
  return "none";
}

KeyLookup find_key(db::PooledConnection& conn, const std::string& email, const std::string& idempotency_key,
                   std::chrono::milliseconds lock_timeout, bool with_body) {
  db::Transaction tx(conn.raw(), conn.statement_timeout());
  auto rows = conn.statements().exec(tx, kFindKey, db::seconds_of(lock_timeout), with_body, email, idempotency_key);
  tx.commit();
  KeyLookup lookup;
  if (rows.empty()) return lookup;
  lookup.user_found = true;
  const auto& row = rows[0];
  if (!row[0].is_null()) lookup.key = key_details_from(row);
  lookup.archived_at = optional_of<std::string>(row[kDetailColumns + 1]);
  return lookup;
}

std::optional<KeyDetails> find_key_by_id(db::PooledConnection& conn, std::int64_t id,
                                         std::chrono::milliseconds lock_timeout, bool with_body) {
  db::Transaction tx(conn.raw(), conn.statement_timeout());
  auto rows = conn.statements().exec(tx, kFindKeyById, db::seconds_of(lock_timeout), with_body, id);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return key_details_from(rows[0]);
}

UnfinishedKeys list_unfinished_keys(db::PooledConnection& conn, std::chrono::milliseconds older_than,
                                    std::int64_t limit, std::chrono::milliseconds lock_timeout) {
  UnfinishedKeys result;
  db::Transaction tx(conn.raw(), conn.statement_timeout());
  result.total = conn.statements().exec(tx, kCountUnfinished, db::seconds_of(older_than))[0][0].as<std::int64_t>();
  auto rows = conn.statements().exec(tx, kListUnfinished, db::seconds_of(lock_timeout), false,
                                     db::seconds_of(older_than), limit);
  tx.commit();
  result.keys.reserve(rows.size());
  for (const auto& row : rows) result.keys.push_back(key_details_from(row));
  return result;
}

}  // namespace rr::idempotency
