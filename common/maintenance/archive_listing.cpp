// Reads idempotency_keys_archive (written by the reaper's batch statement) in archive order.
#include "common/maintenance/archive_listing.hpp"

#include "common/db/sql_timestamps.hpp"
#include "common/db/transaction.hpp"

namespace rr::maintenance {
namespace {

// $1 since, timestamptz text ('-infinity' for none)  $2 since, seconds ago (negative for none)
#define RR_ARCHIVE_WHERE \
  " WHERE a.archived_at >= $1::timestamptz AND ($2::float8 < 0 OR a.archived_at >= now() - make_interval(secs => $2))"

// $3 limit
const db::Statement kListArchived{
    "ops_list_archived",
    "SELECT a.id, " RR_SQL_UTC_TEXT("a.archived_at") ", " RR_SQL_UTC_TEXT("a.created_at") ", " RR_SQL_UTC_TEXT("a.last_run_at") ", " RR_SQL_UTC_TEXT(
        "a.locked_at") ", a.user_id, u.email, a.idempotency_key, a.request_method, a.request_path, "
                       "a.recovery_point, a.payment_idempotency_key, a.attempts, a.last_error "
                       "FROM idempotency_keys_archive a JOIN users u ON u.id = a.user_id" RR_ARCHIVE_WHERE
                       " ORDER BY a.archived_at, a.id LIMIT $3"};

const db::Statement kCountArchived{"ops_count_archived",
                                   "SELECT count(*) FROM idempotency_keys_archive a" RR_ARCHIVE_WHERE};

// PostgreSQL's classes for a timestamp it cannot read: 22007 invalid_datetime_format, 22008
// datetime_field_overflow, 22009 invalid_time_zone_displacement_value, 22023 (an unknown zone).
bool is_bad_timestamp(const pqxx::sql_error& error) {
  const std::string state = error.sqlstate();
  return state == "22007" || state == "22008" || state == "22009" || state == "22023";
}

}  // namespace

ArchivedKeys list_archived_keys(db::PooledConnection& conn, const ArchiveSince& since, std::int64_t limit) {
  const std::string timestamp = since.timestamp.value_or("-infinity");
  const double seconds_ago = since.ago ? static_cast<double>(since.ago->count()) / 1000.0 : -1.0;
  ArchivedKeys result;
  db::Result rows;
  try {
    db::Transaction tx(conn.raw(), conn.statement_timeout());
    result.total = conn.statements().exec(tx, kCountArchived, timestamp, seconds_ago)[0][0].as<std::int64_t>();
    rows = conn.statements().exec(tx, kListArchived, timestamp, seconds_ago, limit);
    tx.commit();
  } catch (const pqxx::data_exception& e) {
    if (is_bad_timestamp(e)) throw InvalidSince(timestamp);
    throw;
  }
  result.keys.reserve(rows.size());
  for (const auto& row : rows) {
    ArchivedKey key;
    key.id = row[0].as<std::int64_t>();
    key.archived_at = row[1].as<std::string>();
    key.created_at = row[2].as<std::string>();
    key.last_run_at = row[3].as<std::string>();
    if (!row[4].is_null()) key.locked_at = row[4].as<std::string>();
    key.user_id = row[5].as<std::int64_t>();
    key.email = row[6].as<std::string>();
    key.idempotency_key = row[7].as<std::string>();
    key.request_method = row[8].as<std::string>();
    key.request_path = row[9].as<std::string>();
    key.recovery_point = row[10].as<std::string>();
    key.payment_idempotency_key = row[11].as<std::string>();
    key.attempts = row[12].as<int>();
    if (!row[13].is_null()) key.last_error = row[13].as<std::string>();
    result.keys.push_back(std::move(key));
  }
  return result;
}

}  // namespace rr::maintenance
