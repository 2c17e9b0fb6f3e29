// A background daemon's METRICS_PORT: Prometheus text whose counters move with the work done.
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <thread>

#include "common/http/client.hpp"
#include "support/process.hpp"
#include "support/test_database.hpp"

using namespace rr::test;

BOOST_AUTO_TEST_SUITE(daemon_metrics)

BOOST_AUTO_TEST_CASE(the_reapers_metrics_count_the_keys_it_reaped) {
  TestDatabase db;
  {
    pqxx::work tx(db.conn());
    tx.exec("INSERT INTO users (email, stripe_customer_id) VALUES ('m@example.com', 'cus_m')");
    tx.exec(
        "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
        "recovery_point, response_code, response_body, user_id, created_at, locked_at) "
        "SELECT 'metrics-key-' || lpad(g::text, 12, '0'), 'POST', '{}', '/rides', 'finished', 201, '{}', "
        "(SELECT id FROM users), now() - interval '4 days', NULL FROM generate_series(1, 3) g");
    tx.commit();
  }
  auto port = free_port();
  ChildProcess reaper(
      {binary("rocket-rides-reaper")},
      {{"DATABASE_URL", db.url()}, {"METRICS_PORT", std::to_string(port)}, {"REAPER_IDLE_SLEEP", "0.2"}});
  BOOST_REQUIRE_MESSAGE(wait_for_port(port, std::chrono::seconds(10)), reaper.output());
  std::string page;
  for (int i = 0; i < 100; ++i) {
    page = rr::http::send(
               {"GET", "http://127.0.0.1:" + std::to_string(port) + "/metrics", {}, "", std::chrono::seconds(2)})
               .body;
    if (page.find("rocket_rides_reaper_keys_deleted_total 3") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_TEST(page.find("rocket_rides_reaper_keys_deleted_total 3") != std::string::npos, page);
  BOOST_TEST(page.find("rocket_rides_loop_passes_total{loop=\"reaper\"}") != std::string::npos);
  BOOST_TEST(page.find("rocket_rides_loop_last_success_timestamp_seconds{loop=\"reaper\"}") != std::string::npos);
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys") == "0");
  reaper.signal(SIGTERM);
  BOOST_TEST(reaper.wait(std::chrono::seconds(10)).value_or(-1) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
