// Migration runner: each pending migration in its own transaction, under a transaction-level advisory lock,
// or statement by statement when it must run outside one (under a lock of its own, held across the
// whole file); then the changed function files of sql/functions/ in one more transaction.
#include "common/db/migrations.hpp"

#include <map>
#include <thread>

#include "common/base/log.hpp"
#include "common/db/migration_file_lock.hpp"
#include "common/db/transaction.hpp"

namespace rr::db {
namespace {

// Any constant works as long as every migrator uses the same one.
constexpr long long kMigrationLockId = 7204419530913184001LL;

// Serializes migrators until `tx` ends. Transaction-level on purpose: a session lock lives in a
// server session, which a transaction-pooling PgBouncer hands to other clients between
// transactions (and may not give back for the unlock). Waiting for it blocks, with a snapshot:
// harmless, since whoever holds it runs one short transaction that never waits for a migration
// outside a transaction (MigrationFileLock, whose index builds wait for every snapshot, has an id
// of its own and is never waited for by blocking).
void lock_migrations(pqxx::transaction_base& tx) {
  tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockId);
}

bool applied(pqxx::transaction_base& tx, int version) {
  return !tx.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", version).empty();
}

// A migration outside a transaction runs again from its first statement, a second later, when a
// statement of it waited longer than its own lock_timeout for a table's lock (55P03: the lock is
// wanted for an instant, and waiting for it without a bound would queue every request on that
// table behind the wait), was a deadlock's victim (40P01: a CREATE INDEX CONCURRENTLY waits for
// other transactions, which an application's may meet), or found an index it builds left invalid
// by an earlier run that stopped half-way (RR003, raised by the file's last statement), or lost a
// race to create the same object (23505, 42P07, 42710: two CREATE ... IF NOT EXISTS at once can
// both find nothing and one then fails). Two migrators of this code never run such a file at once
// (MigrationFileLock); the last three remain for a migrator of an older release running beside
// one of this. Every statement can run twice, and the file's first ones clear what a stopped run
// left.
constexpr int kOutsideTransactionAttempts = 30;

bool worth_another_run(const pqxx::sql_error& e) {
  const auto& state = e.sqlstate();
  return state == "55P03" || state == "RR003" || state == "23505" || state == "42P07" || state == "42710";
}

void record_applied(pqxx::transaction_base& tx, const Migration& migration) {
  tx.exec_params("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", migration.version,
                 std::string(migration.name));
}

// Runs `work` until it returns, again a second later when it threw a deadlock (only if
// `deadlocks_too`) or an sql_error `worth_it` accepts, at most kOutsideTransactionAttempts times.
template <typename Work>
auto run_again_while(const Migration& migration, bool deadlocks_too, bool (*worth_it)(const pqxx::sql_error&),
                     Work&& work) -> decltype(work()) {
  for (int attempt = 1;; ++attempt) {
    try {
      return work();
    } catch (const pqxx::deadlock_detected& e) {  // a transaction_rollback, not an sql_error, in libpqxx 6
      if (!deadlocks_too || attempt == kOutsideTransactionAttempts) throw;
      log::warn("migration statement was a deadlock's victim; running the migration again",
                {{"version", migration.version}, {"attempt", attempt}, {"error", e.what()}});
    } catch (const pqxx::sql_error& e) {
      if (!worth_it(e) || attempt == kOutsideTransactionAttempts) throw;
      log::warn("migration could not finish its work now; running it again",
                {{"version", migration.version}, {"attempt", attempt}, {"error", e.what()}});
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

bool waited_too_long_for_a_lock(const pqxx::sql_error& e) { return e.sqlstate() == "55P03"; }

// Runs `migration` and records it in one transaction under the lock; false when it was already
// recorded (checked under the lock: another migrator may have applied it since we started). A
// migration that sets its own lock_timeout and meets it (55P03) rolls back whole and runs again, a
// second later, up to kOutsideTransactionAttempts times, as one outside a transaction does.
bool apply_in_transaction(pqxx::connection& conn, const Migration& migration,
                          std::chrono::milliseconds statement_timeout) {
  return run_again_while(migration, /*deadlocks_too=*/false, waited_too_long_for_a_lock, [&] {
    Transaction tx(conn, statement_timeout);
    lock_migrations(tx);
    if (applied(tx, migration.version)) return false;  // the transaction rolls back, releasing the lock
    tx.exec(std::string(migration.sql));
    record_applied(tx, migration);
    tx.commit();
    return true;
  });
}

bool recorded(pqxx::connection& conn, const Migration& migration, std::chrono::milliseconds statement_timeout) {
  Transaction tx(conn, statement_timeout);
  lock_migrations(tx);
  return applied(tx, migration.version);
}

// Runs `migration`'s statements one by one outside a transaction, then records it under the lock;
// false when it was already recorded. Between the statements no transaction of this connection
// holds anything, so two migrators would interleave them: one dropping, as left invalid by a
// stopped run, the index the other is building, or both altering one table's catalog row ("tuple
// concurrently updated"); worse, a slow one would still be running them after the other recorded
// the migration and applied the next ones, undoing what those changed (012's fillfactor for rides
// after 015's) with every migrator exiting 0. MigrationFileLock, held on a second connection from
// before the first statement until the migration is recorded, lets one migrator at a time
// through; the others wait for it and then find the migration recorded. Its connection is opened
// only when the migration is pending: an up-to-date database costs no second connection.
bool apply_outside_transaction(pqxx::connection& conn, const Migration& migration,
                               std::chrono::milliseconds statement_timeout) {
  if (recorded(conn, migration, statement_timeout)) return false;
  MigrationFileLock file_lock(conn.options(), migration.version, statement_timeout);
  if (recorded(conn, migration, statement_timeout)) return false;  // applied by the migrator we waited for
  const auto statements = statements_of(migration.sql);
  run_again_while(migration, /*deadlocks_too=*/true, worth_another_run, [&] {
    for (const auto& statement : statements) {
      pqxx::nontransaction tx(conn);
      tx.exec(statement);
    }
  });
  file_lock.confirm_held();
  Transaction tx(conn, statement_timeout);
  lock_migrations(tx);
  if (applied(tx, migration.version)) return false;
  record_applied(tx, migration);
  tx.commit();
  return true;
}

// Recreates the function files whose checksum changed, all in one transaction: callers see the old
// set or the new one. Dropping every function of the name first is what lets a file change a
// return type (CREATE OR REPLACE cannot) or lose an overload. The migrations' lock comes first,
// before the checksums are read: two migrators would otherwise both find a file changed and
// replace the same function at once, which fails one of them ("tuple concurrently updated").
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
    for (const auto& row :
         tx.exec_params("SELECT p.oid::regprocedure::text FROM pg_proc p"
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

bool runs_outside_transaction(const Migration& migration) {
  return migration.sql.starts_with(kOutsideTransactionMarker);
}

std::vector<std::string> statements_of(std::string_view sql) {
  std::vector<std::string> statements;
  std::string current;
  bool in_dollar_quote = false;
  bool has_code = false;  // the statement so far is more than comments and blank lines
  while (!sql.empty()) {
    auto end = sql.find('\n');
    std::string_view line = sql.substr(0, end);
    sql = end == std::string_view::npos ? std::string_view{} : sql.substr(end + 1);
    for (auto at = line.find("$$"); at != std::string_view::npos; at = line.find("$$", at + 2)) {
      in_dollar_quote = !in_dollar_quote;
    }
    auto last = line.find_last_not_of(" \t\r");
    auto first = line.find_first_not_of(" \t\r");
    bool comment = first != std::string_view::npos && line.substr(first).starts_with("--");
    if (first != std::string_view::npos && !comment) has_code = true;
    current.append(line).push_back('\n');
    if (!in_dollar_quote && !comment && last != std::string_view::npos && line[last] == ';') {
      if (has_code) statements.push_back(std::move(current));
      current.clear();
      has_code = false;
    }
  }
  if (has_code) statements.push_back(std::move(current));
  return statements;
}

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
    if (runs_outside_transaction(migration)) {
      if (!apply_outside_transaction(conn, migration, statement_timeout)) {
        ++report.already_applied;
        continue;
      }
    } else if (!apply_in_transaction(conn, migration, statement_timeout)) {
      ++report.already_applied;
      continue;
    }
    report.applied.push_back(migration.version);
    log::info("migration applied", {{"version", migration.version}, {"name", migration.name}});
  }
  apply_functions(conn, functions, statement_timeout, report);
  return report;
}

}  // namespace rr::db
