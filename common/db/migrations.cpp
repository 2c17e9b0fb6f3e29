// Migration runner: each pending migration in its own transaction, under a transaction-level advisory lock.
#include "common/db/migrations.hpp"

#include "common/base/log.hpp"

namespace rr::db {
namespace {

// Any constant works as long as every migrator uses the same one.
constexpr long long kMigrationLockId = 7204419530913184001LL;

// Serializes migrators until `tx` ends. Transaction-level on purpose: a session lock lives in a
// server session, which a transaction-pooling PgBouncer hands to other clients between
// transactions (and may not give back for the unlock).
void lock_migrations(pqxx::transaction_base& tx) {
  tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockId);
}

bool applied(pqxx::transaction_base& tx, int version) {
  return !tx.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", version).empty();
}

}  // namespace

MigrationReport migrate(pqxx::connection& conn, const std::vector<Migration>& migrations) {
  {
    pqxx::work tx(conn);
    lock_migrations(tx);  // two concurrent CREATE TABLE IF NOT EXISTS can still collide
    tx.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INT PRIMARY KEY,"
        " name TEXT NOT NULL,"
        " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    tx.commit();
  }
  MigrationReport report;
  for (const auto& migration : migrations) {
    pqxx::work tx(conn);
    lock_migrations(tx);
    // Checked under the lock: another migrator may have applied it since we started.
    if (applied(tx, migration.version)) {
      ++report.already_applied;
      continue;  // the transaction rolls back, releasing the lock
    }
    tx.exec(std::string(migration.sql));
    tx.exec_params("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", migration.version,
                   std::string(migration.name));
    tx.commit();
    report.applied.push_back(migration.version);
    log::info("migration applied", {{"version", migration.version}, {"name", migration.name}});
  }
  return report;
}

}  // namespace rr::db
