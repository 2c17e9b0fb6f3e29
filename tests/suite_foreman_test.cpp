// The whole suite under foreman with the Procfile, as the README's run command starts it: the
// simulator's traffic must produce rides, jobs in Redis and a completed abandoned request.
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <fstream>
#include <regex>
#include <thread>

#include "common/auth/users.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/test_database.hpp"

using namespace rr::test;

using rr::test::RedisServer;

BOOST_AUTO_TEST_SUITE(suite_under_foreman)

BOOST_AUTO_TEST_CASE(simulated_traffic_reaches_every_daemon_within_a_minute) {
  TestDatabase db;
  RedisServer redis;  // its own queue, not shared with other suites
  auto token = rr::auth::create_user(db.conn(), "demo@example.com", "cus_demo").token;
  std::string env_path = "/tmp/rr-suite-" + random_suffix() + ".env";
  std::string api_port = std::to_string(free_port());
  std::string mock_port = std::to_string(free_port());
  {
    std::ofstream env(env_path);
    env << "DATABASE_URL=" << db.url() << "\nREDIS_URL=" << redis.url() << "\nAPI_PORT=" << api_port
        << "\nSTRIPE_MOCK_PORT=" << mock_port << "\nROCKET_RIDES_BIN=" << ROCKET_RIDES_BIN_DIR
        << "\nSTRIPE_API_BASE=http://127.0.0.1:" << mock_port << "\nSTRIPE_API_KEY=sk_test_suite"
        << "\nSTRIPE_TIMEOUT=1\nIDEMPOTENCY_KEY_LOCK_TIMEOUT=2"
        << "\nCOMPLETER_MIN_AGE=2\nCOMPLETER_LAST_RUN_THRESHOLD=1\nCOMPLETER_IDLE_SLEEP=0.5"
        << "\nMOCK_FAILURE_RATE=0.4\nSIMULATOR_API_URL=http://127.0.0.1:" << api_port << "\nSIMULATOR_TOKEN=" << token
        << "\nSIMULATOR_RATE=10\nSIMULATOR_ABANDON_RATE=0.6\nSIMULATOR_CONCURRENCY=4\n";
  }

  ChildProcess foreman({"/usr/bin/foreman", "start", "-f", std::string(ROCKET_RIDES_SOURCE_DIR) + "/Procfile", "-e",
                        env_path, "-d", ROCKET_RIDES_SOURCE_DIR});
  bool rides = false, jobs = false, completed = false;
  std::regex completed_line(R"(completer.*completed=[1-9])");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline && !(rides && jobs && completed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    BOOST_REQUIRE_MESSAGE(foreman.running(), "foreman exited: " << foreman.output());
    rides = rides || db.scalar("SELECT count(*) FROM rides WHERE stripe_charge_id IS NOT NULL") != "0";
    jobs = jobs || redis.cli({"llen", "queue:default"}) != "0\n";
    completed = completed || std::regex_search(foreman.output(), completed_line);
  }
  foreman.signal(SIGTERM);
  auto status = foreman.wait(std::chrono::seconds(40));
  auto logs = foreman.output();
  BOOST_TEST(rides, "no charged ride");
  BOOST_TEST(jobs, "no job reached Redis");
  BOOST_TEST(completed, "the completer finished no abandoned request");
  BOOST_TEST(status.has_value(), "foreman did not stop");
  BOOST_TEST(logs.find(token) == std::string::npos, "a token was logged");
  if (!(rides && jobs && completed)) BOOST_TEST_MESSAGE(logs.substr(logs.size() > 6000 ? logs.size() - 6000 : 0));
  std::remove(env_path.c_str());
}

BOOST_AUTO_TEST_SUITE_END()
