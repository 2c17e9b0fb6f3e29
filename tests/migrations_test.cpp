// Migrations against a real PostgreSQL: empty database, re-run, two migrators at once.
#include <boost/test/unit_test.hpp>
#include <future>

#include "common/db/migrations.hpp"
#include "support/test_database.hpp"

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
}

BOOST_AUTO_TEST_CASE(no_advisory_lock_outlives_a_migrator) {
  // A session lock would stay behind on a server session a transaction-pooling PgBouncer hands
  // to the next client, and block the next migrator forever.
  TestDatabase db(/*migrated=*/false);
  for (int round = 0; round < 3; ++round) {
    pqxx::connection conn(db.url());
    rr::db::migrate(conn, rr::db::embedded_migrations());
    BOOST_TEST(db.scalar("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == "0");
  }
}

BOOST_AUTO_TEST_CASE(migrations_are_numbered_in_increasing_order) {
  const auto& all = rr::db::embedded_migrations();
  BOOST_REQUIRE(!all.empty());
  BOOST_TEST(all.front().version == 1);
  for (std::size_t i = 1; i < all.size(); ++i) BOOST_TEST(all[i].version > all[i - 1].version);
}

BOOST_AUTO_TEST_SUITE_END()
