// Applies the numbered migrations in sql/ (compiled into the binary) in order, once each.
#pragma once

#include <pqxx/pqxx>
#include <string_view>
#include <vector>

namespace rr::db {

struct Migration {
  int version;
  std::string_view name;
  std::string_view sql;
};

// Generated at build time from sql/*.sql, sorted by version.
const std::vector<Migration>& embedded_migrations();

struct MigrationReport {
  std::vector<int> applied;  // versions applied by this run
  std::size_t already_applied = 0;
};

// Safe to re-run and safe when two copies run at once, also through a transaction-pooling
// PgBouncer: every transaction of the migrator takes a transaction-level advisory lock first and
// checks schema_migrations under it, and each migration commits together with its row.
MigrationReport migrate(pqxx::connection& conn, const std::vector<Migration>& migrations);

}  // namespace rr::db
