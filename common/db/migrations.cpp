// Migration runner: advisory lock, then each pending migration in its own transaction.
#include "common/db/migrations.hpp"

#include <set>

#include "common/base/log.hpp"

namespace rr::db {
namespace {

// Any constant works as long as every migrator uses the same one.
constexpr long long kMigrationLockId = 7204419530913184001LL;

class AdvisoryLock {
 public:
  explicit AdvisoryLock(pqxx::connection& conn) : conn_(conn) {
    pqxx::nontransaction tx(conn_);
    tx.exec_params("SELECT pg_advisory_lock($1)", kMigrationLockId);
  }
  ~AdvisoryLock() {
    try {
      pqxx::nontransaction tx(conn_);
      tx.exec_params("SELECT pg_advisory_unlock($1)", kMigrationLockId);
    } catch (const std::exception&) {
      // The session's end releases it anyway.
    }
  }
  AdvisoryLock(const AdvisoryLock&) = delete;
  AdvisoryLock& operator=(const AdvisoryLock&) = delete;

 private:
  pqxx::connection& conn_;
};

}  // namespace

MigrationReport migrate(pqxx::connection& conn, const std::vector<Migration>& migrations) {
  AdvisoryLock lock(conn);
  {
    pqxx::work tx(conn);
    tx.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INT PRIMARY KEY,"
        " name TEXT NOT NULL,"
        " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    tx.commit();
  }
  std::set<int> done;
  {
    pqxx::nontransaction tx(conn);
    for (const auto& row : tx.exec("SELECT version FROM schema_migrations")) done.insert(row[0].as<int>());
  }
  MigrationReport report;
  for (const auto& migration : migrations) {
    if (done.count(migration.version)) {
      ++report.already_applied;
      continue;
    }
    pqxx::work tx(conn);
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
