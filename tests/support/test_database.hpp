// A real PostgreSQL database per test suite, created from DATABASE_URL and dropped afterwards, so
// suites run in parallel without seeing each other's rows.
#pragma once

#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "common/db/session_options.hpp"

namespace rr::test {

// The variable's value, or a test failure naming it (scripts/test.sh exports them).
std::string require_env(const char* name);
// `url` with its database name replaced.
std::string with_database(const std::string& url, const std::string& database);
std::string random_suffix(std::size_t hex_chars = 12);

class TestDatabase {
 public:
  // Creates a fresh database and, unless told not to, applies the migrations.
  explicit TestDatabase(bool migrated = true);
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  // What the code under test connects with: through the shared PgBouncer when the suite runs
  // behind one (ROCKET_RIDES_TEST_PGBOUNCER=1), else straight to PostgreSQL.
  const std::string& url() const { return url_; }
  // Straight to PostgreSQL, for what only a server session can do (LISTEN, pg_backend_pid).
  const std::string& direct_url() const { return direct_url_; }
  // The statement mode for url(): unnamed through PgBouncer, prepared otherwise.
  db::StatementMode statement_mode() const { return statement_mode_; }
  // For pools of the code under test: the statement mode above and the default statement bound.
  db::SessionOptions session_options() const { return db::SessionOptions{statement_mode_}; }
  // DATABASE_PREPARED_STATEMENTS for code under test that reads its settings: "on" or "off".
  std::string prepared_statements_setting() const {
    return statement_mode_ == db::StatementMode::prepared ? "on" : "off";
  }
  const std::string& name() const { return name_; }
  pqxx::connection& conn() { return *conn_; }
  // Empties every application table (not schema_migrations) between test cases.
  void truncate_all();
  // An outage of this database: refuses new sessions and ends every other one (true), or lets
  // sessions in again (false). Whether the code under test connects directly or through
  // PgBouncer, its next statement fails until the outage ends.
  void refuse_connections(bool refuse);
  // Runs one statement and returns its first column of its first row as text ("" for none).
  std::string scalar(const std::string& sql);
  // Runs `sql` (statements that delete from the insert-only provider ledger, sql/016) in one
  // transaction with the ledger's triggers skipped (session_replication_role = replica), as a
  // lost commit takes ledger rows with it; returns the first column of the last statement's first row.
  std::string past_the_ledger_guard(const std::string& sql);
  // Waits until some request holds the lock of this Idempotency-Key: the next request with it
  // finds it in flight. Fails the test when none does within 10 s.
  void until_key_locked(const std::string& key);

 private:
  std::string admin_url_;
  std::string name_;
  std::string direct_url_;
  std::string url_;
  db::StatementMode statement_mode_ = db::StatementMode::prepared;
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace rr::test
