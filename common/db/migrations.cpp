// Migration runner: each pending migration in its own transaction, under a transaction-level advisory lock,
// then the changed function files of sql/functions/ in one more.
#include "common/db/migrations.hpp"

#include <map>

#include "common/base/log.hpp"
#include "common/db/transaction.hpp"

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

// Recreates the function files whose checksum changed, all in one transaction: callers see the old
// set or the new one. Dropping every function of the name first is what lets a file change a
// return type (CREATE OR REPLACE cannot) or lose an overload.
void apply_functions(pqxx::connection& conn, const std::vector<SqlFunction>& functions,
                     std::chrono::milliseconds statement_timeout, MigrationReport& report) {
  Transaction tx(conn, statement_timeout);
  lock_migrations(tx);
  tx.exec(
      "CREATE TABLE IF NOT EXISTS schema_functions ("
      " name TEXT PRIMARY KEY,"
      " checksum TEXT NOT NULL,"
      " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
  std::map<std::string, std::string> checksums;  // by function name, as last applied
  for (const auto& row : tx.exec("SELECT name, checksum FROM schema_functions")) {
    checksums.emplace(row[0].as<std::string>(), row[1].as<std::string>());
  }
  // A function may call one defined in a later file; as pg_dump does, bodies are checked when called.
  tx.exec("SET LOCAL check_function_bodies = off");
  for (const auto& function : functions) {
    const std::string name(function.name);
    auto it = checksums.find(name);
    if (it != checksums.end() && it->second == function.checksum) continue;
    for (const auto& row : tx.exec_params(
             "SELECT p.oid::regprocedure::text FROM pg_proc p"
             " WHERE p.proname = $1"
             " AND p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())",
             name)) {
      tx.exec("DROP FUNCTION " + row[0].as<std::string>());
    }
    tx.exec(std::string(function.sql));
    tx.exec_params(
        "INSERT INTO schema_functions (name, checksum) VALUES ($1, $2)"
        " ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()",
        name, std::string(function.checksum));
    report.functions_created.push_back(name);
  }
  tx.commit();
  for (const auto& name : report.functions_created) log::info("function created", {{"name", name}});
}

}  // namespace

MigrationReport migrate(pqxx::connection& conn, const std::vector<Migration>& migrations,
                        std::chrono::milliseconds statement_timeout) {
  return migrate(conn, migrations, embedded_functions(), statement_timeout);
}

MigrationReport migrate(pqxx::connection& conn, const std::vector<Migration>& migrations,
                        const std::vector<SqlFunction>& functions, std::chrono::milliseconds statement_timeout) {
  {
    Transaction tx(conn, statement_timeout);
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
    Transaction tx(conn, statement_timeout);
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
  apply_functions(conn, functions, statement_timeout, report);
  return report;
}

}  // namespace rr::db
