// A real PostgreSQL database per test suite, created from DATABASE_URL and dropped afterwards, so
// suites run in parallel without seeing each other's rows.
#pragma once

#include <memory>
#include <pqxx/pqxx>
#include <string>

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

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }
  pqxx::connection& conn() { return *conn_; }
  // Empties every application table (not schema_migrations) between test cases.
  void truncate_all();
  // Runs one statement and returns its first column of its first row as text ("" for none).
  std::string scalar(const std::string& sql);

 private:
  std::string admin_url_;
  std::string name_;
  std::string url_;
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace rr::test
