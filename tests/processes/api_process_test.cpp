// The real rocket-rides-api process over real HTTP: the contract end to end, a kill -9 in the
// middle of a charge, graceful stop with a request in flight, and what the logs must never hold.
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <pqxx/pqxx>
#include <thread>

#include "common/http/client.hpp"
#include "support/api_process.hpp"
#include "support/notify_socket.hpp"
#include "support/process.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

using namespace rr::test;
namespace http = rr::http;

namespace {

const std::string& kForm = RideFixture::kDefaultForm;

struct ApiProcessFixture : ApiFixture {
  http::ClientResponse post(const std::string& key, const std::string& body = kForm) {
    return api->post_ride(token, key, body);
  }
  // Another session holds alice's row FOR UPDATE until the returned transaction ends: a new key's
  // insert checks its foreign key with FOR KEY SHARE and waits behind it, as a statement behind
  // any stuck lock would.
  std::unique_ptr<pqxx::work> lock_alices_row(pqxx::connection& other) {
    auto holder = std::make_unique<pqxx::work>(other);
    holder->exec("SELECT 1 FROM users WHERE email = 'alice@example.com' FOR UPDATE");
    return holder;
  }
  // POST /rides for `key` behind that lock: it must be answered 503 with Retry-After within five
  // seconds, whatever bound answered it.
  http::ClientResponse post_stuck(const std::string& key) {
    auto started = std::chrono::steady_clock::now();
    auto stuck = post(key);
    BOOST_TEST(stuck.status == 503, stuck.body);
    BOOST_TEST(!stuck.header("Retry-After").empty());
    BOOST_TEST((std::chrono::steady_clock::now() - started < std::chrono::seconds(5)));
    return stuck;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(api_process, ApiProcessFixture)

BOOST_AUTO_TEST_CASE(a_ride_and_its_replay_over_real_http) {
  start_api();
  auto key = new_key();
  auto first = post(key);
  BOOST_TEST(first.status == 201, first.body);
  BOOST_TEST(first.header("Content-Type") == "application/json");
  BOOST_TEST(!first.header("X-Request-Id").empty());
  auto replay = post(key);
  BOOST_TEST(replay.status == 201);
  BOOST_TEST(replay.body == first.body);
  BOOST_TEST(replay.header("Idempotent-Replayed") == "true");
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(an_oversized_body_is_413_and_the_server_keeps_serving) {
  start_api();
  auto big = post(new_key(), std::string(200 * 1024, 'x'));
  BOOST_TEST(big.status == 413);
  BOOST_TEST(db.scalar("SELECT count(*) FROM idempotency_keys") == "0");
  BOOST_TEST(post(new_key()).status == 201);
}

BOOST_AUTO_TEST_CASE(kill_9_during_a_charge_then_a_retry_after_restart_charges_once) {
  stripe.configure("{\"latency_ms\":1500}");
  start_api({{"IDEMPOTENCY_KEY_LOCK_TIMEOUT", "1"}});
  auto key = new_key();
  auto in_flight = std::async(std::launch::async, [&] {
    try {
      return post(key).status;
    } catch (const http::TransportError&) {
      return 0;  // the process died under us: no answer
    }
  });
  // Wait until the ride is committed and the charge is at the provider, then kill the API
  // without a chance to clean up.
  bool at_charge = false;
  for (int i = 0; i < 100 && !at_charge; ++i) {
    at_charge = db.scalar("SELECT count(*) FROM idempotency_keys WHERE recovery_point = 'ride_created'") == "1";
    if (!at_charge) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BOOST_REQUIRE(at_charge);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  api->signal(SIGKILL);
  BOOST_TEST(in_flight.get() == 0);
  BOOST_TEST(db.scalar("SELECT recovery_point FROM idempotency_keys") == "ride_created");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the provider finishes the charge
  stripe.configure("{\"latency_ms\":0}");
  api.reset();
  start_api({{"IDEMPOTENCY_KEY_LOCK_TIMEOUT", "1"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the dead owner's lock expires
  auto retry = post(key);
  BOOST_TEST(retry.status == 201, retry.body);
  BOOST_TEST(stripe.charges() == 1);
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides") == "1");
}

BOOST_AUTO_TEST_CASE(sigterm_with_a_request_in_flight_answers_it_and_exits_0) {
  stripe.configure("{\"latency_ms\":1000}");
  start_api();
  auto in_flight = std::async(std::launch::async, [&] { return post(new_key()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  api->signal(SIGTERM);
  auto response = in_flight.get();
  BOOST_TEST(response.status == 201, response.body);
  auto status = api->wait(std::chrono::seconds(10));
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(*status == 0);
  BOOST_TEST(!wait_for_port(port, std::chrono::milliseconds(100)));
}

BOOST_AUTO_TEST_CASE(logs_never_contain_the_token_or_the_full_idempotency_key) {
  start_api();
  auto key = new_key();
  BOOST_REQUIRE(post(key).status == 201);
  BOOST_REQUIRE(post(key).status == 201);
  // A failing request too: its error paths log as well.
  token = "rr_" + std::string(64, 'f');
  BOOST_REQUIRE(post(new_key()).status == 401);
  api->signal(SIGTERM);
  api->wait(std::chrono::seconds(10));
  auto logs = api->output();
  BOOST_TEST(logs.find("msg=request") != std::string::npos);
  BOOST_TEST(logs.find("rr_") == std::string::npos);
  BOOST_TEST(logs.find(key) == std::string::npos);
  BOOST_TEST(logs.find("sk_test_rocket") == std::string::npos);
}

// The access log is buffered (common/base/log_buffer.hpp): a graceful stop right after a burst of
// answers must still write every line, each once.
BOOST_AUTO_TEST_CASE(sigterm_right_after_a_burst_writes_every_access_line_before_exit) {
  start_api();
  auto key = new_key();
  BOOST_REQUIRE(post(key).status == 201);
  constexpr int kRequests = 300;
  auto replay = api->ride_request(token, key);
  for (int i = 0; i < kRequests; ++i) {
    replay.headers.emplace_back("X-Request-Id", "burst-" + std::to_string(i) + "-end");
    BOOST_REQUIRE(http::send(replay).status == 201);
    replay.headers.pop_back();
  }
  api->signal(SIGTERM);
  BOOST_REQUIRE(api->wait(std::chrono::seconds(10)) == 0);
  auto logs = api->output();
  int missing = 0, repeated = 0;
  for (int i = 0; i < kRequests; ++i) {
    std::string needle = "request_id=burst-" + std::to_string(i) + "-end ";
    auto first = logs.find(needle);
    if (first == std::string::npos) ++missing;
    if (first != std::string::npos && logs.find(needle, first + 1) != std::string::npos) ++repeated;
  }
  BOOST_TEST(missing == 0);
  BOOST_TEST(repeated == 0);
  BOOST_TEST(logs.find("msg=stopped") != std::string::npos, logs.substr(logs.size() > 2000 ? logs.size() - 2000 : 0));
}

BOOST_AUTO_TEST_CASE(access_lines_carry_request_id_status_and_replay) {
  start_api();
  auto key = new_key();
  post(key);
  auto replay = http::send({"POST",
                            "http://127.0.0.1:" + std::to_string(port) + "/rides",
                            {{"Authorization", "Bearer " + token},
                             {"Idempotency-Key", key},
                             {"X-Request-Id", "trace-me-42"},
                             {"Content-Type", "application/x-www-form-urlencoded"}},
                            kForm,
                            std::chrono::seconds(10)});
  BOOST_TEST(replay.header("X-Request-Id") == "trace-me-42");
  BOOST_TEST(api->wait_for_output("request_id=trace-me-42", std::chrono::seconds(2)));
  auto logs = api->output();
  auto line_start = logs.find("request_id=trace-me-42");
  auto line = logs.substr(line_start, logs.find('\n', line_start) - line_start);
  BOOST_TEST(line.find("status=201") != std::string::npos, line);
  BOOST_TEST(line.find("replayed=true") != std::string::npos, line);
  BOOST_TEST(line.find("method=POST") != std::string::npos, line);
}

BOOST_AUTO_TEST_CASE(systemd_hears_ready_watchdog_pings_and_stopping) {
  NotifySocket notify;
  start_api({{"NOTIFY_SOCKET", notify.path()}, {"WATCHDOG_USEC", "300000"}});
  BOOST_TEST(notify.wait_for("READY=1", std::chrono::seconds(5)));
  // The watchdog is fed only after the API answered its own /healthz.
  BOOST_TEST(notify.wait_for("WATCHDOG=1", std::chrono::seconds(2)));
  BOOST_TEST(notify.wait_for("WATCHDOG=1", std::chrono::seconds(2)));
  api->signal(SIGTERM);
  BOOST_TEST(notify.wait_for("STOPPING=1", std::chrono::seconds(5)));
  BOOST_TEST(api->wait(std::chrono::seconds(10)).value_or(-1) == 0);
}

BOOST_AUTO_TEST_CASE(bad_configuration_exits_2_naming_the_variable) {
  auto missing =
      run_command({binary("rocket-rides-api")}, {{"DATABASE_URL", db.url()}, {"STRIPE_API_KEY", std::nullopt}});
  BOOST_TEST(missing.exit_code == 2);
  BOOST_TEST(missing.out.find("STRIPE_API_KEY") != std::string::npos);
  auto bad_port = run_command({binary("rocket-rides-api")},
                              {{"DATABASE_URL", db.url()}, {"STRIPE_API_KEY", "k"}, {"PORT", "http"}});
  BOOST_TEST(bad_port.exit_code == 2);
  BOOST_TEST(bad_port.out.find("PORT") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_statement_stuck_past_database_statement_timeout_is_a_503_and_the_retry_is_charged_once) {
  start_api({{"DATABASE_STATEMENT_TIMEOUT", "0.5"}, {"DATABASE_POOL_SIZE", "1"}});
  pqxx::connection other(db.direct_url());
  auto holder = lock_alices_row(other);
  auto key = new_key();
  auto stuck = post_stuck(key);
  BOOST_TEST(stuck.header("Retry-After") == "2");
  BOOST_TEST(api->output().find("statement timeout") != std::string::npos, api->output());
  holder->commit();
  holder.reset();
  // The one pooled connection came back usable, and the key was never half written.
  auto retried = post(key);
  BOOST_TEST(retried.status == 201, retried.body);
  BOOST_TEST(stripe.charges() == 1);
  auto bad = run_command({binary("rocket-rides-api")},
                         {{"DATABASE_URL", db.url()}, {"STRIPE_API_KEY", "k"}, {"DATABASE_STATEMENT_TIMEOUT", "soon"}});
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(bad.out.find("DATABASE_STATEMENT_TIMEOUT") != std::string::npos, bad.out);
}

// DATABASE_CALL_TIMEOUT bounds what the server's own bound does not: here the statement bound is
// 30 s, and a call stuck behind a lock gets 503 with Retry-After from our side within the call
// bound. Its connection is closed, not returned: the pool's one slot serves the next request at
// once, while the lock is still held.
BOOST_AUTO_TEST_CASE(a_call_stuck_past_database_call_timeout_is_a_503_and_the_pool_serves_the_next_request) {
  start_api({{"DATABASE_STATEMENT_TIMEOUT", "30"}, {"DATABASE_CALL_TIMEOUT", "1"}, {"DATABASE_POOL_SIZE", "1"}});
  // A request runs on a fiber once its token is known to the process (an unknown one is looked up
  // on a worker, whose calls DATABASE_STATEMENT_TIMEOUT bounds instead).
  BOOST_TEST(api->get("/rides", token).status == 200);
  pqxx::connection other(db.direct_url());
  auto holder = lock_alices_row(other);
  auto key = new_key();
  post_stuck(key);
  BOOST_TEST(api->wait_for_output("database call passed DATABASE_CALL_TIMEOUT", std::chrono::seconds(2)),
             api->output());
  auto listed = api->get("/rides", token);  // the lock is still held
  BOOST_TEST(listed.status == 200, listed.body);
  // The abandoned call still waits on the server, and would commit the key once the lock goes
  // (whether a call given up on committed is unknown, as for any broken connection: the key is
  // then resumed after IDEMPOTENCY_LOCK_TIMEOUT). Ended here, as statement_timeout would end it,
  // so that the retry below runs the key at once.
  pqxx::connection admin(db.direct_url());
  pqxx::nontransaction(admin).exec(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
      "AND datname = current_database()");
  holder->commit();
  holder.reset();
  auto retried = post(key);
  BOOST_TEST(retried.status == 201, retried.body);
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_SUITE_END()
