// Throwaway databases for tests.
#include "support/test_database.hpp"

#include <sys/random.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "support/migrated_template.hpp"
#include "support/pgbouncer.hpp"

namespace rr::test {

std::string require_env(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) {
    BOOST_FAIL(std::string(name) + " is not set; run the tests through scripts/test.sh");
  }
  return value;
}

std::string with_database(const std::string& url, const std::string& database) {
  auto scheme_end = url.find("://");
  auto path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  auto query_start = url.find('?');
  std::string base = path_start == std::string::npos ? url.substr(0, query_start) : url.substr(0, path_start);
  std::string query = query_start == std::string::npos ? "" : url.substr(query_start);
  return base + "/" + database + query;
}

std::string random_suffix(std::size_t hex_chars) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  while (out.size() < hex_chars) {
    unsigned char byte = 0;
    if (getrandom(&byte, 1, 0) != 1) byte = static_cast<unsigned char>(std::rand());
    out += digits[byte >> 4];
    out += digits[byte & 0xf];
  }
  out.resize(hex_chars);
  return out;
}

TestDatabase::TestDatabase(bool migrated) {
  admin_url_ = require_env("DATABASE_URL");
  name_ = "rr_test_" + random_suffix();
  {
    // A copy of the migrated template rather than a migration of its own: the same schema for
    // a fraction of the time. Migrating through PgBouncer is the migration suites' own subject.
    const std::string from_template = migrated ? " TEMPLATE " + migrated_template(admin_url_) : "";
    pqxx::connection admin(admin_url_);
    pqxx::nontransaction tx(admin);
    // FILE_COPY copies the template's files as they are; the default (WAL_LOG) reads and logs every
    // block, 0.19 CPU-seconds a copy against 0.12 on the test server (fsync off), for the several
    // hundred databases a run creates. Its checkpoints cost little with nothing to sync.
    tx.exec("CREATE DATABASE " + name_ + from_template + " STRATEGY FILE_COPY");
  }
  direct_url_ = with_database(admin_url_, name_);
  url_ = direct_url_;
  if (auto* bouncer = shared_pgbouncer()) {
    url_ = bouncer->route(direct_url_);
    statement_mode_ = db::StatementMode::unnamed;
  }
  conn_ = std::make_unique<pqxx::connection>(direct_url_);
}

TestDatabase::~TestDatabase() {
  try {
    conn_.reset();
    pqxx::connection admin(admin_url_);
    pqxx::nontransaction tx(admin);
    tx.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception&) {
    // A leftover database in a throwaway cluster harms nothing.
  }
}

void TestDatabase::truncate_all() {
  pqxx::nontransaction tx(*conn_);
  tx.exec(
      "TRUNCATE users, api_tokens, idempotency_keys, rides, provider_charges, provider_refunds, audit_records, "
      "staged_jobs, idempotency_keys_archive, rider_sessions "
      "RESTART IDENTITY CASCADE");
}

void TestDatabase::refuse_connections(bool refuse) {
  // From the admin database: PostgreSQL will not disallow connections to the current one.
  pqxx::connection admin(admin_url_);
  pqxx::nontransaction tx(admin);
  tx.exec("ALTER DATABASE " + name_ + " ALLOW_CONNECTIONS " + (refuse ? "false" : "true"));
  if (refuse) {
    // Our own session (conn_) is ended too; reopened once connections are allowed again.
    tx.exec_params("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1", name_);
  } else {
    conn_ = std::make_unique<pqxx::connection>(direct_url_);
  }
}

std::string TestDatabase::scalar(const std::string& sql) {
  pqxx::nontransaction tx(*conn_);
  auto rows = tx.exec(sql);
  if (rows.empty() || rows[0][0].is_null()) return "";
  return rows[0][0].as<std::string>();
}

std::string TestDatabase::past_the_ledger_guard(const std::string& sql) {
  pqxx::work tx(*conn_);
  tx.exec("SET LOCAL session_replication_role = replica");
  auto rows = tx.exec(sql);
  tx.commit();
  if (rows.empty() || rows[0][0].is_null()) return "";
  return rows[0][0].as<std::string>();
}

void TestDatabase::until_key_locked(const std::string& key) {
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(10))) {
    pqxx::nontransaction tx(*conn_);
    auto locked = tx.exec_params(
        "SELECT count(*) FROM idempotency_keys WHERE idempotency_key = $1 "
        "AND locked_at IS NOT NULL AND recovery_point <> 'finished'",
        key);
    if (locked[0][0].as<int>() == 1) return;
  }
  BOOST_FAIL("no request ever locked key " << key);
}

}  // namespace rr::test
