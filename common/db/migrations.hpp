// Applies the numbered migrations in sql/ (compiled into the binary) in order, once each, then
// (re)creates the functions of sql/functions/ whose text changed.
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <vector>

#include "common/db/session_options.hpp"

namespace rr::db {

struct Migration {
  int version;
  std::string_view name;
  std::string_view sql;
};

// One file of sql/functions/: every overload of the function `name`, and the MD5 of the file.
struct SqlFunction {
  std::string_view name;
  std::string_view checksum;
  std::string_view sql;
};

// A migration whose first line is this runs outside a transaction, one statement at a time (what
// CREATE INDEX CONCURRENTLY needs, so that building an index on a busy table blocks no write).
// Each of its statements must be safe to run again (IF NOT EXISTS, IF EXISTS, ON CONFLICT): a run
// that stops half-way is not recorded, and the next one runs the whole file again. A statement
// ends with a line ending in ';' outside a $$-quoted body.
inline constexpr std::string_view kOutsideTransactionMarker = "-- migrate: outside a transaction";
bool runs_outside_transaction(const Migration& migration);
std::vector<std::string> statements_of(std::string_view sql);

// Generated at build time from sql/*.sql, sorted by version.
const std::vector<Migration>& embedded_migrations();
// Generated at build time from sql/functions/*.sql, sorted by name.
const std::vector<SqlFunction>& embedded_functions();

struct MigrationReport {
  std::vector<int> applied;  // versions applied by this run
  std::size_t already_applied = 0;
  std::vector<std::string> functions_created;  // sql/functions/ files (re)created by this run
};

// Safe to re-run and safe when several copies run at once, also through a transaction-pooling
// PgBouncer: every transaction of the migrator takes a transaction-level advisory lock first and
// checks schema_migrations under it, and each migration commits together with its row. One that
// runs outside a transaction is run by one migrator at a time, under a lock held by a transaction
// on a second connection opened with `conn`'s connection string (migration_file_lock.hpp), and is
// recorded after its last statement.
// Every statement is bounded by `statement_timeout` (a migration that needs longer runs with a
// larger DATABASE_STATEMENT_TIMEOUT), waiting for another migrator's lock included.
// After the numbered migrations, the functions step: in one transaction under the same lock, each
// function file whose checksum differs from the one schema_functions holds has every function of
// its name dropped and the file run, so a changed signature or return type, or an overload the
// file no longer has, needs nothing more; files already applied cost one SELECT for them all.
MigrationReport migrate(pqxx::connection& conn, const std::vector<Migration>& migrations,
                        std::chrono::milliseconds statement_timeout = SessionOptions{}.statement_timeout);
MigrationReport migrate(pqxx::connection& conn, const std::vector<Migration>& migrations,
                        const std::vector<SqlFunction>& functions,
                        std::chrono::milliseconds statement_timeout = SessionOptions{}.statement_timeout);

}  // namespace rr::db
