// Several migrators at once, as hosts started together run them: the real `rocket-rides-api
// migrate` processes from an empty database and from every schema version, each exiting 0 and
// leaving the schema one migrator alone leaves; and a migration outside a transaction run by one
// migrator only, under a lock that outlives idle timeouts. CTest runs the suite a second time
// through a transaction-pooling PgBouncer (concurrent_migrations_test_pgbouncer).
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/db/migrations.hpp"
#include "support/process.hpp"
#include "support/test_database.hpp"

using rr::test::binary;
using rr::test::ChildProcess;
using rr::test::TestDatabase;

namespace {

constexpr int kMigrators = 4;
constexpr int kRoundsFromEmpty = 3;
// A migrator that deadlocks waits for its statements' bounds, far longer than a migration here.
constexpr std::chrono::seconds kMigratorDeadline{60};

// The schema as pg_dump writes it, and what it leaves out: invalid indexes, the migrator's own
// records and the rows the migrations insert (one each, whichever migrator inserted it).
std::string schema_of(TestDatabase& db) {
  auto dump = rr::test::run_command({"/usr/bin/pg_dump", "--schema-only", "--no-owner", "-d", db.direct_url()});
  BOOST_REQUIRE_MESSAGE(dump.exit_code == 0, "pg_dump failed: " << dump.err);
  std::istringstream lines(dump.out);
  std::string schema;
  for (std::string line; std::getline(lines, line);) {
    // A random key per dump (pg_dump since 15.14).
    if (line.starts_with("\\restrict") || line.starts_with("\\unrestrict")) continue;
    schema += line + '\n';
  }
  schema +=
      "invalid indexes: " +
      db.scalar(
          "SELECT coalesce(string_agg(indexrelid::regclass::text, ','), '') FROM pg_index"
          " WHERE NOT indisvalid") +
      "\nversions: " + db.scalar("SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations") +
      "\nfunctions: " +
      db.scalar("SELECT string_agg(name || ' ' || checksum, ',' ORDER BY name) FROM schema_functions") +
      "\none-row tables: " +
      db.scalar(
          "SELECT (SELECT count(*) FROM idempotency_keys_scan) || ','"
          " || (SELECT count(*) FROM staged_jobs_jid_prefix)") +
      "\n";
  return schema;
}

// The first line where two schemas differ, for a failure message that fits on a screen.
std::string first_difference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "none";
    if (la != lb || more_a != more_b) return "line " + std::to_string(line) + ": want '" + la + "', got '" + lb + "'";
  }
}

// The schema one `migrate` process alone leaves on an empty database.
const std::string& sequential_schema() {
  static const std::string schema = [] {
    TestDatabase db(/*migrated=*/false);
    auto run = rr::test::run_command({binary("rocket-rides-api"), "migrate"}, {{"DATABASE_URL", db.url()}});
    BOOST_REQUIRE_MESSAGE(run.exit_code == 0, "a lone migrator failed: " << run.err);
    return schema_of(db);
  }();
  return schema;
}

// What a failed migrator said last: its fatal error line.
std::string last_error(const std::string& output) {
  auto at = output.rfind("level=error");
  if (at == std::string::npos) return output.substr(output.size() > 400 ? output.size() - 400 : 0);
  auto end = output.find('\n', at);
  return output.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// Starts kMigrators `rocket-rides-api migrate` on `db` at once and checks that every one exits 0
// and that the schema ends as a lone migrator leaves it. Returns whether anything failed, for the log.
bool run_migrators_at_once(TestDatabase& db, const std::string& round) {
  std::vector<std::unique_ptr<ChildProcess>> migrators;
  for (int i = 0; i < kMigrators; ++i) {
    migrators.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{binary("rocket-rides-api"), "migrate"},
                                                       rr::test::EnvChanges{{"DATABASE_URL", db.url()}}));
  }
  int failed = 0;
  for (auto& migrator : migrators) {
    const auto status = migrator->wait(kMigratorDeadline);
    if (status == 0) continue;
    ++failed;
    BOOST_ERROR(round << ": a migrator "
                      << (status ? "exited " + std::to_string(*status) : std::string("hung (killed)")) << ": "
                      << last_error(migrator->output()));
  }
  const std::string schema = schema_of(db);
  const bool same_schema = schema == sequential_schema();
  BOOST_TEST(same_schema, round << ": the schema differs from a lone migrator's at "
                                << first_difference(sequential_schema(), schema));
  // Transaction-level locks only: nothing stays behind on a server session PgBouncer keeps.
  BOOST_TEST(db.scalar("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
                       " WHERE l.locktype = 'advisory' AND d.datname = current_database()") == "0",
             round);
  return failed > 0 || !same_schema;
}

// A database as the first `count` numbered migrations leave it, before any functions step: the
// concurrent migrators then run the rest, and every function file, themselves.
std::unique_ptr<TestDatabase> database_at_version(std::size_t count) {
  auto db = std::make_unique<TestDatabase>(/*migrated=*/false);
  const auto& all = rr::db::embedded_migrations();
  const std::vector<rr::db::Migration> first(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count));
  pqxx::connection conn(db->url());
  rr::db::migrate(conn, first, std::vector<rr::db::SqlFunction>{});
  return db;
}

// A migration outside a transaction that leaves a trace of each run of its statements.
constexpr std::string_view kTracedFile =
    "-- migrate: outside a transaction\n"
    "CREATE TABLE IF NOT EXISTS probe_runs (at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(), what TEXT);\n"
    "INSERT INTO probe_runs (what) VALUES ('first statement');\n"
    "SELECT pg_sleep(0.5);\n"
    "INSERT INTO probe_runs (what) VALUES ('last statement');\n";

// Migrates `url` with `sql` as its one migration (version 9001) and no function files.
rr::db::MigrationReport migrate_only(const std::string& url, std::string_view sql) {
  pqxx::connection conn(url);
  return rr::db::migrate(conn, {{9001, "9001_probe", sql}}, std::vector<rr::db::SqlFunction>{});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(concurrent_migrations)

BOOST_AUTO_TEST_CASE(migrators_started_together_on_an_empty_database_all_succeed_with_one_schema) {
  int failed_rounds = 0;
  for (int round = 1; round <= kRoundsFromEmpty; ++round) {
    TestDatabase db(/*migrated=*/false);
    if (run_migrators_at_once(db, "empty database, round " + std::to_string(round))) ++failed_rounds;
  }
  BOOST_TEST_MESSAGE(failed_rounds << " of " << kRoundsFromEmpty << " rounds from an empty database had a failure");
}

BOOST_AUTO_TEST_CASE(migrators_started_together_on_every_schema_version_all_succeed_with_one_schema) {
  const auto& all = rr::db::embedded_migrations();
  int failed_rounds = 0;
  for (std::size_t count = 1; count <= all.size(); ++count) {
    auto db = database_at_version(count);
    if (run_migrators_at_once(*db, "from version " + std::to_string(all[count - 1].version))) ++failed_rounds;
  }
  BOOST_TEST_MESSAGE(failed_rounds << " of " << all.size() << " starting versions had a failure");
}

BOOST_AUTO_TEST_CASE(a_migration_outside_a_transaction_is_run_by_one_migrator_only) {
  TestDatabase db(/*migrated=*/false);
  auto run = [&] { return migrate_only(db.url(), kTracedFile).applied.size(); };
  auto a = std::async(std::launch::async, run);
  auto b = std::async(std::launch::async, run);
  BOOST_TEST(a.get() + b.get() == 1u);
  // The second migrator waited for the first and found the file recorded: one run, not two
  // interleaved (the statements can each run twice; interleaved files are what broke).
  BOOST_TEST(db.scalar("SELECT string_agg(what, ',' ORDER BY at) FROM probe_runs") == "first statement,last statement");
}

BOOST_AUTO_TEST_CASE(the_lock_outlives_an_idle_in_transaction_timeout_shorter_than_the_file) {
  // The holder idles in its transaction while the file runs; the heartbeat keeps it from
  // PostgreSQL's idle_in_transaction_session_timeout (and PgBouncer's idle_transaction_timeout).
  // Set before any session of the database exists: PgBouncer's pooled ones keep what they began with.
  TestDatabase db(/*migrated=*/false);
  db.scalar("ALTER DATABASE " + db.name() + " SET idle_in_transaction_session_timeout = '2s'");
  const auto report = migrate_only(db.url(),
                                   "-- migrate: outside a transaction\n"
                                   "SELECT pg_sleep(3.5);\n");
  BOOST_TEST(report.applied == std::vector<int>{9001});
}

BOOST_AUTO_TEST_CASE(a_lock_lost_midway_leaves_the_migration_unrecorded_and_says_so) {
  // The file ends the holder's session itself: its statements then run without the lock for a
  // while, so the run must not count. Only this database's holder: pg_locks lists the whole
  // cluster's, and this suite's other variant (through PgBouncer) may hold the same key meanwhile.
  TestDatabase db(/*migrated=*/false);
  const std::string_view kills_the_holder =
      "-- migrate: outside a transaction\n"
      "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted\n"
      "    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())\n"
      "    AND ((classid::bigint << 32) | objid::bigint) = 7204419530913184002;\n"
      "SELECT pg_sleep(0.2);\n";
  try {
    migrate_only(db.url(), kills_the_holder);
    BOOST_ERROR("a migration whose lock was lost was recorded");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()).find("migration 9001 ran outside a transaction but the lock") != std::string::npos,
               e.what());
  }
  BOOST_TEST(db.scalar("SELECT count(*) FROM schema_migrations WHERE version = 9001") == "0");
}

BOOST_AUTO_TEST_SUITE_END()
