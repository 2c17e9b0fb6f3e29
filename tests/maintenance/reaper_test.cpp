// The reaper against a real database: keys past the horizon go in short batches, rides stay, keys
// that never finished are archived first, and nothing another transaction holds is waited for.
#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <future>
#include <thread>
#include "common/auth/tokens.hpp"

#include "common/auth/users.hpp"
#include "common/db/connection_pool.hpp"
#include "common/maintenance/reaper.hpp"
#include "support/process.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

using rr::maintenance::Reaper;
using rr::maintenance::ReaperOptions;
using rr::maintenance::ReaperReport;

namespace {

const std::string kParams =
    R"({"origin_lat": 37.7749, "origin_lon": -122.4194, "target_lat": 37.8044, "target_lon": -122.2712})";

struct ReaperFixture {
  rr::test::TestDatabase db;
  rr::db::ConnectionPool pool{db.url(), db.session_options(), 2, std::chrono::seconds(5)};
  std::int64_t user_id = rr::auth::create_user(db.conn(), "alice@example.com", "cus_alice").user.id;

  // A key created `age` ago (a Postgres interval), finished with a 201 unless told otherwise.
  std::int64_t insert_key(const std::string& age, const std::string& recovery_point = "finished",
                          const std::string& key = "") {
    bool finished = recovery_point == "finished";
    pqxx::work tx(db.conn());
    auto id = tx.exec_params(
                    "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
                    "recovery_point, response_code, response_body, user_id, created_at, last_run_at, locked_at, "
                    "attempts, last_error) "
                    "VALUES (COALESCE(NULLIF($1, ''), 'key-' || md5(random()::text)), 'POST', $2::jsonb, '/rides', "
                    "$3, $4, $5, $6, now() - $7::interval, now() - $7::interval, NULL, $8, $9) RETURNING id",
                    key, kParams, recovery_point, finished ? std::optional<int>(201) : std::nullopt,
                    finished ? std::optional<std::string>("{}") : std::nullopt, user_id, age, finished ? 0 : 3,
                    finished ? std::nullopt : std::optional<std::string>("transient failure (503)"))[0][0]
                  .as<std::int64_t>();
    tx.commit();
    return id;
  }

  std::int64_t insert_ride(std::int64_t key_id) {
    return std::stoll(db.scalar(
        "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id) VALUES (" +
        std::to_string(key_id) + ", 37.7749, -122.4194, 37.8044, -122.2712, " + std::to_string(user_id) +
        ") RETURNING id"));
  }

  // `count` finished keys created four days ago, in one statement.
  void insert_old_keys(int count) {
    db.scalar(
        "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
        "recovery_point, response_code, response_body, user_id, created_at, last_run_at, locked_at) "
        "SELECT 'bulk-key-' || lpad(g::text, 12, '0'), 'POST', '{}'::jsonb, '/rides', 'finished', 201, '{}', " +
        std::to_string(user_id) + ", now() - interval '4 days', now() - interval '4 days', NULL " +
        "FROM generate_series(1, " + std::to_string(count) + ") g");
  }

  std::string count(const std::string& table) { return db.scalar("SELECT count(*) FROM " + table); }
};

ReaperOptions batches_of(std::int64_t n) {
  ReaperOptions options;
  options.batch_size = n;
  return options;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reaper)

BOOST_AUTO_TEST_CASE(a_key_past_the_horizon_is_deleted_and_its_ride_keeps_its_row) {
  ReaperFixture f;
  auto key_id = f.insert_key("73 hours");
  auto ride_id = f.insert_ride(key_id);
  Reaper reaper(f.pool, {});
  auto report = reaper.run_once();
  BOOST_TEST(report.deleted == 1);
  BOOST_TEST(report.archived == 0);
  BOOST_TEST(f.count("idempotency_keys") == "0");
  BOOST_TEST(f.count("idempotency_keys_archive") == "0");  // it finished: nothing to act on
  BOOST_TEST(f.db.scalar("SELECT COALESCE(idempotency_key_id::text, 'null') FROM rides WHERE id = " +
                         std::to_string(ride_id)) == "null");
}

BOOST_AUTO_TEST_CASE(a_key_inside_the_horizon_is_kept) {
  ReaperFixture f;
  auto key_id = f.insert_key("71 hours");
  f.insert_ride(key_id);
  Reaper reaper(f.pool, {});
  auto report = reaper.run_once();
  BOOST_TEST(report.deleted == 0);
  BOOST_TEST(f.count("idempotency_keys") == "1");
  BOOST_TEST(f.db.scalar("SELECT idempotency_key_id FROM rides") == std::to_string(key_id));
}

BOOST_AUTO_TEST_CASE(an_empty_database_is_a_no_op) {
  ReaperFixture f;
  Reaper reaper(f.pool, {});
  auto report = reaper.run_once();
  BOOST_TEST(report.deleted == 0);
  BOOST_TEST(report.archived == 0);
}

BOOST_AUTO_TEST_CASE(an_unfinished_key_is_archived_with_what_a_human_needs_before_it_is_deleted) {
  ReaperFixture f;
  const std::string key = "abandoned-key-0123456789";
  auto unfinished = f.insert_key("80 hours", "ride_created", key);
  f.insert_key("80 hours");  // finished: deleted without a record
  Reaper reaper(f.pool, {});
  auto report = reaper.run_once();
  BOOST_TEST(report.deleted == 2);
  BOOST_TEST(report.archived == 1);
  BOOST_TEST(f.count("idempotency_keys") == "0");
  BOOST_TEST(f.count("idempotency_keys_archive") == "1");
  BOOST_TEST(f.db.scalar("SELECT concat_ws(' ', id, user_id, idempotency_key, request_method, request_path, "
                         "recovery_point, attempts, last_error, request_params->>'origin_lat', "
                         "created_at < now() - interval '79 hours', payment_idempotency_key LIKE 'rr-%') "
                         "FROM idempotency_keys_archive") ==
             std::to_string(unfinished) + " " + std::to_string(f.user_id) + " " + key +
                 " POST /rides ride_created 3 transient failure (503) 37.7749 t t");
}

BOOST_AUTO_TEST_CASE(old_keys_go_in_batches_until_a_batch_comes_back_short) {
  ReaperFixture f;
  f.insert_old_keys(2500);
  auto fresh = f.insert_key("1 hour");
  Reaper reaper(f.pool, batches_of(1000));
  std::vector<std::int64_t> batches;
  for (;;) {
    auto report = reaper.run_once();
    batches.push_back(report.deleted);
    if (!report.full_batch(1000)) break;
    BOOST_REQUIRE(batches.size() < 10);
  }
  BOOST_TEST(batches == (std::vector<std::int64_t>{1000, 1000, 500}), boost::test_tools::per_element());
  BOOST_TEST(f.count("idempotency_keys") == "1");
  BOOST_TEST(f.db.scalar("SELECT id FROM idempotency_keys") == std::to_string(fresh));
}

BOOST_AUTO_TEST_CASE(expired_rider_sessions_go_in_batches_and_live_ones_stay) {
  ReaperFixture f;
  // Five sessions that expired (a minute to five ago), two that have not; created an hour ago.
  f.db.scalar(
      "INSERT INTO rider_sessions (token_hash, user_id, api_token_hash, csrf_token, created_at, expires_at) "
      "SELECT sha256(g::text::bytea), " +
      std::to_string(f.user_id) +
      ", (SELECT token_hash FROM api_tokens), encode(sha256(('c' || g)::bytea), 'hex'), now() - interval '1 hour', "
      "CASE WHEN g <= 5 THEN now() - make_interval(mins => g) ELSE now() + interval '1 hour' END "
      "FROM generate_series(1, 7) g");
  Reaper reaper(f.pool, batches_of(3));
  auto first = reaper.run_once();
  BOOST_TEST(first.sessions_deleted == 3);
  BOOST_TEST(first.deleted == 0);
  BOOST_TEST(first.full_batch(3));  // --once goes on
  // The oldest expiries went first.
  BOOST_TEST(f.db.scalar("SELECT count(*) FROM rider_sessions WHERE expires_at < now() - interval '2 minutes 30 "
                         "seconds'") == "0");
  auto second = reaper.run_once();
  BOOST_TEST(second.sessions_deleted == 2);
  BOOST_TEST(!second.full_batch(3));
  BOOST_TEST(reaper.run_once().sessions_deleted == 0);
  BOOST_TEST(f.count("rider_sessions") == "2");
  BOOST_TEST(f.db.scalar("SELECT count(*) FROM rider_sessions WHERE expires_at > now()") == "2");
}

BOOST_AUTO_TEST_CASE(keys_another_transaction_holds_are_skipped_not_waited_for) {
  ReaperFixture f;
  auto held = f.insert_key("4 days");
  f.insert_key("4 days");
  f.insert_key("4 days");
  // The API in the middle of a phase on the first key holds its row lock.
  pqxx::connection other(f.db.url());
  pqxx::work holder(other);
  holder.exec("SELECT 1 FROM idempotency_keys WHERE id = " + std::to_string(held) + " FOR UPDATE");

  Reaper reaper(f.pool, {});
  auto start = std::chrono::steady_clock::now();
  auto report = reaper.run_once();
  auto took = std::chrono::steady_clock::now() - start;
  BOOST_TEST(report.deleted == 2);
  BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(took).count() < 2000);
  holder.abort();
  // The next pass picks up the key that was skipped.
  BOOST_TEST(reaper.run_once().deleted == 1);
  BOOST_TEST(f.count("idempotency_keys") == "0");
}

BOOST_AUTO_TEST_CASE(a_key_whose_lock_is_live_is_left_for_a_later_pass) {
  ReaperFixture f;
  auto in_flight = f.insert_key("4 days", "ride_created");
  f.db.scalar("UPDATE idempotency_keys SET locked_at = now(), lock_token = gen_random_uuid() WHERE id = " +
              std::to_string(in_flight));
  Reaper reaper(f.pool, {});
  BOOST_TEST(reaper.run_once().deleted == 0);
  f.db.scalar("UPDATE idempotency_keys SET locked_at = now() - interval '2 hours'");
  auto report = reaper.run_once();
  BOOST_TEST(report.deleted == 1);
  BOOST_TEST(report.archived == 1);
}

BOOST_AUTO_TEST_CASE(the_log_tag_is_a_12_hex_digest_prefix_not_the_key) {
  auto tag = rr::auth::log_tag("abandoned-key-0123456789");
  BOOST_TEST(tag.size() == 12u);
  BOOST_TEST(tag.find_first_not_of("0123456789abcdef") == std::string::npos);
  BOOST_TEST(tag != rr::auth::log_tag("abandoned-key-0123456788"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reaper_binary)

BOOST_AUTO_TEST_CASE(once_reaps_every_full_batch_logs_archived_keys_by_tag_and_exits_0) {
  ReaperFixture f;
  f.insert_old_keys(25);
  const std::string key = "abandoned-key-0123456789";
  f.insert_key("4 days", "started", key);
  auto result = rr::test::run_command({rr::test::binary("rocket-rides-reaper"), "--once"},
                                      {{"DATABASE_URL", f.db.url()}, {"REAPER_BATCH_SIZE", "10"}});
  BOOST_TEST(result.exit_code == 0, result.out << result.err);
  BOOST_TEST(f.count("idempotency_keys") == "0");
  BOOST_TEST(f.count("idempotency_keys_archive") == "1");
  const auto& out = result.out;
  BOOST_TEST(out.find("key=" + rr::auth::log_tag(key)) != std::string::npos, out);
  BOOST_TEST(out.find("recovery_point=started") != std::string::npos, out);
  BOOST_TEST(out.find(key) == std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(a_bad_batch_size_exits_2_naming_the_variable) {
  auto result = rr::test::run_command({rr::test::binary("rocket-rides-reaper"), "--once"},
                                      {{"DATABASE_URL", "postgresql://127.0.0.1:1/none"}, {"REAPER_BATCH_SIZE", "0"}});
  BOOST_TEST(result.exit_code == 2);
  BOOST_TEST((result.out + result.err).find("REAPER_BATCH_SIZE") != std::string::npos, result.out << result.err);
}

BOOST_AUTO_TEST_CASE(sigterm_stops_the_daemon_with_status_0) {
  ReaperFixture f;
  auto metrics_port = rr::test::free_port();
  rr::test::ChildProcess daemon(
      {rr::test::binary("rocket-rides-reaper")},
      {{"DATABASE_URL", f.db.url()}, {"REAPER_IDLE_SLEEP", "30"}, {"METRICS_PORT", std::to_string(metrics_port)}});
  // The stop handlers are installed before the metrics endpoint listens: a SIGTERM sent earlier
  // (a fixed sleep on a loaded machine) found the default action and killed it without a word.
  BOOST_REQUIRE_MESSAGE(daemon.wait_for_output("metrics endpoint listening", std::chrono::seconds(30)),
                        daemon.output());
  BOOST_TEST(daemon.running());
  daemon.signal(SIGTERM);
  auto status = daemon.wait(std::chrono::seconds(10));
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(*status == 0, daemon.output());
  BOOST_TEST(daemon.output().find("reaper stopping") != std::string::npos, daemon.output());
}

BOOST_AUTO_TEST_CASE(losing_the_database_is_logged_backed_off_and_recovered_from) {
  ReaperFixture f;
  // libpqxx 6.4 leaks the PGresult of a statement that meets a dropped connection (a third-party
  // leak of ~2 KB per outage); suppressed for this child only.
  std::string suppressions = "/tmp/rr-reaper-lsan-" + rr::test::random_suffix() + ".supp";
  {
    std::ofstream file(suppressions);
    file << "leak:libpqxx-6.4.so\n";  // its frames are often unsymbolized: match the module
  }
  rr::test::ChildProcess daemon(
      {rr::test::binary("rocket-rides-reaper")},
      {{"DATABASE_URL", f.db.url()}, {"REAPER_IDLE_SLEEP", "0.1"}, {"LSAN_OPTIONS", "suppressions=" + suppressions}});
  bool connected = false;
  for (int i = 0; i < 100 && !connected; ++i) {
    connected = f.db.scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                    "pid <> pg_backend_pid()") != "0";
    if (!connected) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_REQUIRE(connected);
  // A dropped session alone is replaced unseen (the pool sees it closed before using it): the
  // database must refuse the reconnect too, for a while.
  f.db.refuse_connections(true);
  // Through PgBouncer the failure comes when query_wait_timeout (deploy/pgbouncer.ini: 10 s) ends
  // the wait for a server session.
  BOOST_TEST(daemon.wait_for_output("reaper pass failed", std::chrono::seconds(25)), daemon.output());
  f.db.refuse_connections(false);
  BOOST_TEST(daemon.wait_for_output("reaper recovered", std::chrono::seconds(20)), daemon.output());
  f.insert_key("4 days");
  bool reaped = false;
  for (int i = 0; i < 100 && !reaped; ++i) {
    reaped = f.count("idempotency_keys") == "0";
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  BOOST_TEST(reaped, daemon.output());
  daemon.signal(SIGTERM);
  BOOST_TEST(daemon.wait(std::chrono::seconds(10)).value_or(-1) == 0, daemon.output());
  std::remove(suppressions.c_str());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reaper_under_load)

BOOST_AUTO_TEST_CASE(reaping_100000_old_keys_never_holds_up_the_api_for_more_than_a_batch) {
  using std::chrono::milliseconds;
  using clock = std::chrono::steady_clock;
  rr::test::RideFixture f;
  f.db.scalar(
      "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, recovery_point, "
      "response_code, response_body, user_id, created_at, last_run_at, locked_at) "
      "SELECT 'bulk-key-' || lpad(g::text, 12, '0'), 'POST', '{}'::jsonb, '/rides', 'finished', 201, '{}', " +
      std::to_string(f.user_id) + ", now() - interval '4 days', now() - interval '4 days', NULL " +
      "FROM generate_series(1, 100000) g");

  std::atomic<bool> reaping{true};
  auto reaper_run = std::async(std::launch::async, [&] {
    Reaper reaper(f.app->pool(), {});
    std::pair<int, milliseconds> batches_and_longest{0, milliseconds{0}};
    for (;;) {
      auto start = clock::now();
      auto report = reaper.run_once();
      auto took = std::chrono::duration_cast<milliseconds>(clock::now() - start);
      ++batches_and_longest.first;
      batches_and_longest.second = std::max(batches_and_longest.second, took);
      if (!report.full_batch(1000)) break;
    }
    reaping = false;
    return batches_and_longest;
  });

  // The API keeps taking new rides (new keys, inserts into the same table) the whole time.
  std::vector<milliseconds> latencies;
  std::vector<int> statuses;
  while (reaping) {
    auto start = clock::now();
    statuses.push_back(f.post_ride(rr::test::new_key()).status);
    latencies.push_back(std::chrono::duration_cast<milliseconds>(clock::now() - start));
  }
  auto [batches, longest_batch] = reaper_run.get();
  BOOST_TEST(batches == 101);  // 100 full batches, then an empty one
  BOOST_TEST(!statuses.empty());
  BOOST_TEST(std::all_of(statuses.begin(), statuses.end(), [](int s) { return s == 201; }));
  auto slowest = *std::max_element(latencies.begin(), latencies.end());
  BOOST_TEST_MESSAGE("requests=" << latencies.size() << " slowest_ms=" << slowest.count()
                                 << " longest_batch_ms=" << longest_batch.count());
  // A request may wait at most for one batch (plus its own work on two shared, sanitized cores).
  BOOST_TEST(slowest.count() < longest_batch.count() + 2000);
  BOOST_TEST(f.count("idempotency_keys") == std::to_string(statuses.size()));
  BOOST_TEST(f.count("rides") == std::to_string(statuses.size()));
}

BOOST_AUTO_TEST_SUITE_END()
