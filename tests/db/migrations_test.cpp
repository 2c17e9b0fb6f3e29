// Migrations against a real PostgreSQL: empty database, re-run, two migrators at once, and the
// functions step (sql/functions/): one definition per function, idempotent, and an upgraded
// database equal to a fresh one.
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "common/db/migrations.hpp"
#include "support/test_database.hpp"
#include "support/text.hpp"

using rr::test::read_file;
using rr::test::TestDatabase;

BOOST_AUTO_TEST_SUITE(migrations)

BOOST_AUTO_TEST_CASE(applies_every_migration_on_an_empty_database) {
  TestDatabase db(/*migrated=*/false);
  auto report = rr::db::migrate(db.conn(), rr::db::embedded_migrations());
  BOOST_TEST(report.applied.size() == rr::db::embedded_migrations().size());
  BOOST_TEST(report.already_applied == 0u);
  BOOST_TEST(db.scalar("SELECT count(*) FROM schema_migrations") ==
             std::to_string(rr::db::embedded_migrations().size()));
  for (const char* table : {"users", "api_tokens", "idempotency_keys", "rides", "audit_records", "staged_jobs",
                            "idempotency_keys_archive"}) {
    BOOST_TEST(db.scalar(std::string("SELECT to_regclass('") + table + "') IS NOT NULL") == "t", table);
  }
}

BOOST_AUTO_TEST_CASE(rerunning_applies_nothing) {
  TestDatabase db(/*migrated=*/true);
  auto report = rr::db::migrate(db.conn(), rr::db::embedded_migrations());
  BOOST_TEST(report.applied.empty());
  BOOST_TEST(report.already_applied == rr::db::embedded_migrations().size());
}

BOOST_AUTO_TEST_CASE(two_migrators_at_once_apply_each_migration_once) {
  TestDatabase db(/*migrated=*/false);
  auto run = [&] {
    pqxx::connection conn(db.url());
    return rr::db::migrate(conn, rr::db::embedded_migrations()).applied.size();
  };
  auto a = std::async(std::launch::async, run);
  auto b = std::async(std::launch::async, run);
  BOOST_TEST(a.get() + b.get() == rr::db::embedded_migrations().size());
  BOOST_TEST(db.scalar("SELECT count(*) FROM schema_migrations") ==
             std::to_string(rr::db::embedded_migrations().size()));
  // 012 builds an index CONCURRENTLY: whichever migrator a deadlock between the two chose as its
  // victim, the index ends valid (an invalid one would be kept by IF NOT EXISTS and never used).
  BOOST_TEST(db.scalar("SELECT bool_and(indisvalid) FROM pg_index WHERE indrelid = 'idempotency_keys'::regclass") ==
             "t");
  BOOST_TEST(db.scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 'idempotency_keys_retried'") == "1");
}

BOOST_AUTO_TEST_CASE(no_advisory_lock_outlives_a_migrator) {
  // A session lock would stay behind on a server session a transaction-pooling PgBouncer hands
  // to the next client, and block the next migrator forever.
  TestDatabase db(/*migrated=*/false);
  for (int round = 0; round < 3; ++round) {
    pqxx::connection conn(db.url());
    rr::db::migrate(conn, rr::db::embedded_migrations());
    BOOST_TEST(db.scalar("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                         "WHERE l.locktype = 'advisory' AND d.datname = current_database()") == "0");
  }
}

BOOST_AUTO_TEST_CASE(a_migration_outside_a_transaction_runs_statement_by_statement) {
  const std::string sql =
      "-- migrate: outside a transaction\n"
      "-- a comment; with a semicolon\n"
      "CREATE INDEX CONCURRENTLY IF NOT EXISTS a ON t (x);\n"
      "DO $$\nBEGIN\n    SET LOCAL lock_timeout = '1s';\n    ALTER TABLE t SET (fillfactor = 90);\nEND;\n$$;\n"
      "\n-- trailing comment\n";
  rr::db::Migration migration{99, "099_test", sql};
  BOOST_TEST(rr::db::runs_outside_transaction(migration));
  auto statements = rr::db::statements_of(sql);
  BOOST_TEST_REQUIRE(statements.size() == 2u);
  BOOST_TEST(statements[0].find("CREATE INDEX CONCURRENTLY") != std::string::npos);
  BOOST_TEST(statements[1].find("DO $$") != std::string::npos);
  BOOST_TEST(statements[1].find("END;\n$$;") != std::string::npos);
  BOOST_TEST(!rr::db::runs_outside_transaction(rr::db::embedded_migrations().front()));
  // The one in the tree that must build an index without blocking writes.
  bool found = false;
  for (const auto& m : rr::db::embedded_migrations()) {
    if (m.name == "012_hot_finishing_updates") found = rr::db::runs_outside_transaction(m);
  }
  BOOST_TEST(found);
}

BOOST_AUTO_TEST_CASE(migrations_are_numbered_in_increasing_order) {
  const auto& all = rr::db::embedded_migrations();
  BOOST_REQUIRE(!all.empty());
  BOOST_TEST(all.front().version == 1);
  for (std::size_t i = 1; i < all.size(); ++i) BOOST_TEST(all[i].version > all[i - 1].version);
}

namespace {

std::vector<std::filesystem::path> sql_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".sql") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The last commit of main before 011 moved the functions out of the numbered migrations: its
// sql/0NN_*.sql are what deployed databases ran, function bodies included.
constexpr const char* kBeforeFunctionFiles = "48801a6";

// The output of a git command in the source tree; fails the test when git fails.
std::string git(const std::string& args) {
  const std::string command = std::string("git -C '") + ROCKET_RIDES_SOURCE_DIR + "' " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  BOOST_REQUIRE_MESSAGE(pipe, "cannot run " << command);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) out.append(buffer, n);
  BOOST_REQUIRE_MESSAGE(pclose(pipe.release()) == 0, command << " failed (the test needs the git history)");
  return out;
}

// Every function of the schema by signature, with its definition.
std::map<std::string, std::string> function_definitions(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  std::map<std::string, std::string> out;
  for (const auto& row : tx.exec("SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) FROM pg_proc p"
                                 " WHERE p.pronamespace = 'public'::regnamespace")) {
    out.emplace(row[0].as<std::string>(), row[1].as<std::string>());
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(no_function_is_defined_in_more_than_one_file_under_sql) {
  const std::filesystem::path sql = std::filesystem::path(ROCKET_RIDES_SOURCE_DIR) / "sql";
  const std::regex create(R"(CREATE\s+(OR\s+REPLACE\s+)?FUNCTION\s+([A-Za-z_0-9.]+))", std::regex::icase);
  std::map<std::string, std::set<std::string>> files_of;
  auto scan = [&](const std::filesystem::path& path) {
    const std::string text = read_file(path);
    for (std::sregex_iterator it(text.begin(), text.end(), create), end; it != end; ++it) {
      files_of[(*it)[2].str()].insert(std::filesystem::relative(path, sql).string());
    }
  };
  for (const auto& path : sql_files(sql)) scan(path);
  for (const auto& path : sql_files(sql / "functions")) {
    scan(path);
    // A function file holds the functions of its name only: the step drops them by that name.
    const std::string text = read_file(path);
    for (std::sregex_iterator it(text.begin(), text.end(), create), end; it != end; ++it) {
      BOOST_TEST((*it)[2].str() == path.stem().string(), path.string());
    }
  }
  BOOST_TEST(!files_of.empty());
  for (const auto& [name, files] : files_of) {
    BOOST_TEST(files.size() == 1u, name << " is defined in " << files.size() << " files");
  }
}

BOOST_AUTO_TEST_CASE(every_function_file_is_embedded) {
  const auto dir = std::filesystem::path(ROCKET_RIDES_SOURCE_DIR) / "sql" / "functions";
  BOOST_TEST(rr::db::embedded_functions().size() == sql_files(dir).size());
}

BOOST_AUTO_TEST_CASE(the_functions_step_recreates_nothing_the_second_time) {
  TestDatabase db(/*migrated=*/false);
  auto first = rr::db::migrate(db.conn(), rr::db::embedded_migrations());
  BOOST_TEST(first.functions_created.size() == rr::db::embedded_functions().size());
  const std::string xmins =
      "SELECT string_agg(proname || ':' || xmin::text, ',' ORDER BY oid) FROM pg_proc"
      " WHERE pronamespace = 'public'::regnamespace";
  const std::string before = db.scalar(xmins);
  auto second = rr::db::migrate(db.conn(), rr::db::embedded_migrations());
  BOOST_TEST(second.functions_created.empty());
  BOOST_TEST(second.applied.empty());
  BOOST_TEST(db.scalar(xmins) == before);  // not even replaced by the same text
  BOOST_TEST(db.scalar("SELECT count(*) FROM schema_functions") == std::to_string(rr::db::embedded_functions().size()));
}

BOOST_AUTO_TEST_CASE(a_changed_function_file_may_change_the_return_type_and_drop_an_overload) {
  TestDatabase db(/*migrated=*/true);
  using rr::db::SqlFunction;
  const std::vector<SqlFunction> v1{
      {"rr_probe", "one",
       "CREATE OR REPLACE FUNCTION rr_probe(a int) RETURNS int LANGUAGE sql AS $$ SELECT a $$;\n"
       "CREATE OR REPLACE FUNCTION rr_probe(a int, b int) RETURNS int LANGUAGE sql AS $$ SELECT a + b $$;"}};
  auto first = rr::db::migrate(db.conn(), rr::db::embedded_migrations(), v1);
  BOOST_TEST(first.functions_created == std::vector<std::string>{"rr_probe"});
  BOOST_TEST(db.scalar("SELECT rr_probe(2, 3)") == "5");

  // CREATE OR REPLACE alone would fail here: "cannot change return type of existing function".
  const std::vector<SqlFunction> v2{
      {"rr_probe", "two",
       "CREATE OR REPLACE FUNCTION rr_probe(a int) RETURNS text LANGUAGE sql AS $$ SELECT 'x' || a $$;"}};
  auto second = rr::db::migrate(db.conn(), rr::db::embedded_migrations(), v2);
  BOOST_TEST(second.functions_created == std::vector<std::string>{"rr_probe"});
  BOOST_TEST(db.scalar("SELECT rr_probe(2)") == "x2");
  BOOST_TEST(db.scalar("SELECT count(*) FROM pg_proc WHERE proname = 'rr_probe'") == "1");
  BOOST_TEST(db.scalar("SELECT checksum FROM schema_functions WHERE name = 'rr_probe'") == "two");
}

BOOST_AUTO_TEST_CASE(a_database_upgraded_from_010_ends_like_a_fresh_one) {
  // As deployed databases are: 001-010 run with their function bodies by the migrator of that time
  // (taken from git rather than copied into the tree, where they would be a second definition).
  // A shallow clone (CI systems that fetch one commit) has no old tree to read: said, not failed.
  if (git("rev-parse --is-shallow-repository").rfind("true", 0) == 0) {
    BOOST_TEST_MESSAGE("skipped: a shallow clone has no " << kBeforeFunctionFiles << " to upgrade from");
    return;
  }
  TestDatabase upgraded(/*migrated=*/false);
  {
    pqxx::work tx(upgraded.conn());
    tx.exec(
        "CREATE TABLE schema_migrations (version INT PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    std::istringstream names(git(std::string("ls-tree --name-only ") + kBeforeFunctionFiles + " sql/"));
    int count = 0;
    for (std::string path; std::getline(names, path);) {
      if (path.size() < 8 || path.substr(path.size() - 4) != ".sql") continue;
      const std::string stem = std::filesystem::path(path).stem().string();
      tx.exec(git(std::string("show ") + kBeforeFunctionFiles + ":" + path));
      tx.exec_params("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", std::stoi(stem), stem);
      ++count;
    }
    BOOST_REQUIRE(count == 10);
    tx.commit();
  }
  BOOST_TEST(upgraded.scalar("SELECT count(*) FROM pg_proc WHERE proname = 'rides_create_with_key'") == "2");
  auto report = rr::db::migrate(upgraded.conn(), rr::db::embedded_migrations());
  BOOST_TEST(report.applied.size() == rr::db::embedded_migrations().size() - 10);
  BOOST_TEST(report.functions_created.size() == rr::db::embedded_functions().size());

  TestDatabase fresh(/*migrated=*/true);
  const auto want = function_definitions(fresh.conn());
  const auto got = function_definitions(upgraded.conn());
  BOOST_TEST(!want.empty());
  for (const auto& [signature, definition] : want) {
    auto it = got.find(signature);
    BOOST_TEST_CONTEXT(signature) {
      BOOST_TEST_REQUIRE((it != got.end()));
      BOOST_TEST(it->second == definition);
    }
  }
  for (const auto& [signature, definition] : got) BOOST_TEST(want.count(signature) == 1u, "extra " << signature);
  const std::string columns =
      "SELECT string_agg(table_name || '.' || column_name || ' ' || data_type || ' ' ||"
      " coalesce(column_default, ''), ',' ORDER BY table_name, column_name)"
      " FROM information_schema.columns WHERE table_schema = 'public'"
      " AND table_name NOT IN ('schema_migrations', 'schema_functions')";
  BOOST_TEST(upgraded.scalar(columns) == fresh.scalar(columns));
}

BOOST_AUTO_TEST_SUITE_END()
