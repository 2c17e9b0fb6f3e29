// "Drain before stop" on the real rocket-rides-api process over real sockets: after SIGTERM,
// SHUTDOWN_DRAIN seconds of /readyz 503 while everything else is served with "Connection: close",
// then the listener closes, in-flight requests finish, idle connections close, and exit 0.
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <future>
#include <stdexcept>
#include <thread>

#include "common/http/client.hpp"
#include "support/api_process.hpp"
#include "support/notify_socket.hpp"
#include "support/polling.hpp"
#include "support/process.hpp"
#include "support/raw_connection.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

using namespace rr::test;
using namespace std::chrono_literals;
namespace http = rr::http;

namespace {

const std::string kDrainStarted = "draining: /readyz answers 503 for";
const std::string kAcceptingStopped = "stopping: no new connections";

// ApiFixture's API starts without SHUTDOWN_DRAIN: a test that drains says for how long.
struct ApiDrainFixture : ApiFixture {
  http::ClientRequest get(const std::string& path, bool authenticated = false) const {
    return api->get_request(path, authenticated ? token : "");
  }

  http::ClientRequest post_ride(const std::string& key, std::chrono::milliseconds timeout = 10s) const {
    return api->ride_request(token, key, RideFixture::kDefaultForm, timeout);
  }

  // Polls until `n` rides exist: a POST /rides has committed its ride and is at the provider.
  bool wait_for_rides(int n, std::chrono::milliseconds timeout = 10s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (db.scalar("SELECT count(*) FROM rides") != std::to_string(n)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  void require_drain_started() {
    BOOST_REQUIRE_MESSAGE(api->wait_for_output(kDrainStarted, 5s), "no drain line: " << api->output());
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(api_drain, ApiDrainFixture)

BOOST_AUTO_TEST_CASE(during_the_drain_readyz_is_503_and_everything_else_is_served_with_connection_close) {
  start_api({{"SHUTDOWN_DRAIN", "2"}});
  // A pooled client, as a load balancer holds connections: before the signal it keeps one.
  http::Client balancer;
  auto before = balancer.send(get("/readyz"));
  BOOST_TEST(before.status == 200, before.body);
  BOOST_TEST(before.header("Connection") != "close");
  BOOST_REQUIRE(balancer.idle_connections() == 1u);

  auto signalled = std::chrono::steady_clock::now();
  api->signal(SIGTERM);
  require_drain_started();

  // The kept-alive connection's next answer says it closes, and the client does not keep it.
  auto ready = balancer.send(get("/readyz"));
  BOOST_TEST(ready.status == 503, ready.body);
  BOOST_TEST(ready.body.find("shutting down") != std::string::npos, ready.body);
  BOOST_TEST(ready.header("Connection") == "close");
  BOOST_TEST(balancer.idle_connections() == 0u);

  // Everything else is still served, on new connections, each closed after its answer.
  auto health = balancer.send(get("/healthz"));
  BOOST_TEST(health.status == 200, health.body);
  BOOST_TEST(health.header("Connection") == "close");
  auto created = balancer.send(post_ride(new_key()));
  BOOST_TEST(created.status == 201, created.body);
  BOOST_TEST(created.header("Connection") == "close");
  auto listed = balancer.send(get("/rides", true));
  BOOST_TEST(listed.status == 200, listed.body);
  BOOST_TEST(listed.body.find(db.scalar("SELECT id FROM rides")) != std::string::npos, listed.body);
  BOOST_TEST(listed.header("Connection") == "close");
  BOOST_TEST(balancer.idle_connections() == 0u);
  BOOST_TEST(api->output().find(kAcceptingStopped) == std::string::npos, "stopped accepting during the drain");

  // Then the listener closes and the process exits 0, not before the drain has run its course.
  BOOST_TEST(api->wait_for_output(kAcceptingStopped, 10s));
  auto status = api->wait(10s);
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(*status == 0, api->output());
  BOOST_TEST(millis(std::chrono::steady_clock::now() - signalled) >= 1900);
  BOOST_TEST(!wait_for_port(port, 100ms));
}

BOOST_AUTO_TEST_CASE(after_the_drain_connects_are_refused_before_the_process_exits) {
  // A request in flight keeps the process alive after the listener closed, so the refusal is seen
  // from a still running server, not merely from a dead one.
  stripe.configure("{\"latency_ms\":3000}");
  start_api({{"SHUTDOWN_DRAIN", "1"}});
  auto in_flight = std::async(std::launch::async, [&] { return http::send(post_ride(new_key(), 20s)); });
  BOOST_REQUIRE(wait_for_rides(1));
  api->signal(SIGTERM);
  require_drain_started();
  BOOST_REQUIRE(api->wait_for_output(kAcceptingStopped, 10s));
  BOOST_TEST(api->running());
  BOOST_CHECK_THROW(http::send(get("/healthz")), http::TransportError);
  BOOST_TEST(in_flight.get().status == 201);
  BOOST_TEST(api->wait(10s).value_or(-1) == 0, api->output());
}

BOOST_AUTO_TEST_CASE(requests_in_flight_before_and_during_the_drain_get_their_201_after_accepting_stops) {
  // Each charge outlasts the drain, so both requests are still running when the listener closes.
  stripe.configure("{\"latency_ms\":4000}");
  start_api({{"SHUTDOWN_DRAIN", "2"}});
  auto before = std::async(std::launch::async, [&] { return http::send(post_ride(new_key(), 20s)); });
  BOOST_REQUIRE(wait_for_rides(1));
  api->signal(SIGTERM);
  require_drain_started();
  auto during = std::async(std::launch::async, [&] { return http::send(post_ride(new_key(), 20s)); });
  BOOST_REQUIRE(wait_for_rides(2));

  BOOST_REQUIRE(api->wait_for_output(kAcceptingStopped, 10s));
  BOOST_TEST((before.wait_for(0s) != std::future_status::ready), "finished before accepting stopped");
  BOOST_TEST((during.wait_for(0s) != std::future_status::ready), "finished before accepting stopped");
  auto first = before.get();
  auto second = during.get();
  BOOST_TEST(first.status == 201, first.body);
  BOOST_TEST(second.status == 201, second.body);
  BOOST_TEST(first.header("Connection") == "close");
  BOOST_TEST(second.header("Connection") == "close");
  BOOST_TEST(stripe.charges() == 2);
  BOOST_TEST(api->wait(10s).value_or(-1) == 0, api->output());
}

BOOST_AUTO_TEST_CASE(an_idle_kept_alive_connection_is_closed_when_the_drain_ends) {
  start_api({{"SHUTDOWN_DRAIN", "2"}});
  RawConnection idle(port);
  idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  auto answer = idle.read_response();
  BOOST_REQUIRE_MESSAGE(answer.starts_with("HTTP/1.1 200"), answer);
  BOOST_REQUIRE(answer.find("Connection: close") == std::string::npos);
  api->signal(SIGTERM);
  require_drain_started();
  // Kept open through the drain (it sends nothing, so nothing can race a close)...
  BOOST_TEST(!idle.closed_by_peer(500ms));
  // ...and closed by the server once the listener closes.
  BOOST_TEST(idle.closed_by_peer(10s));
  BOOST_TEST(api->wait(10s).value_or(-1) == 0, api->output());
}

BOOST_AUTO_TEST_CASE(systemd_hears_stopping_when_the_drain_starts) {
  NotifySocket notify;
  start_api({{"NOTIFY_SOCKET", notify.path()}, {"SHUTDOWN_DRAIN", "2"}});
  BOOST_REQUIRE(notify.wait_for("READY=1", 5s));
  api->signal(SIGTERM);
  BOOST_TEST(notify.wait_for("STOPPING=1", 5s));
  // Still serving: STOPPING=1 came at the start of the drain, not when accepting stopped.
  BOOST_TEST(http::send(get("/readyz")).status == 503);
  BOOST_TEST(api->wait(10s).value_or(-1) == 0, api->output());
}

BOOST_AUTO_TEST_CASE(a_second_signal_during_the_drain_exits_at_once) {
  start_api({{"SHUTDOWN_DRAIN", "60"}});
  api->signal(SIGTERM);
  require_drain_started();
  auto signalled = std::chrono::steady_clock::now();
  api->signal(SIGINT);
  auto status = api->wait(15s);
  BOOST_REQUIRE_MESSAGE(status.has_value(), "still draining after a second signal");
  BOOST_TEST(*status == 1);  // the existing "second signal: exiting now" status
  BOOST_TEST(millis(std::chrono::steady_clock::now() - signalled) < 15000);
  BOOST_TEST(api->output().find("second signal") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(without_shutdown_drain_sigterm_stops_at_once) {
  start_api();
  BOOST_REQUIRE(http::send(get("/readyz")).status == 200);
  auto signalled = std::chrono::steady_clock::now();
  api->signal(SIGTERM);
  auto status = api->wait(10s);
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(*status == 0, api->output());
  // Generous for a loaded machine, yet far below any drain an operator would set.
  BOOST_TEST(millis(std::chrono::steady_clock::now() - signalled) < 5000);
  BOOST_TEST(api->output().find("draining:") == std::string::npos, api->output());
}

BOOST_AUTO_TEST_CASE(a_bad_shutdown_drain_exits_2_naming_the_variable) {
  for (const char* bad : {"-1", "3601", "soon", "2s"}) {
    auto result = run_command({binary("rocket-rides-api")},
                              {{"DATABASE_URL", db.url()}, {"STRIPE_API_KEY", "k"}, {"SHUTDOWN_DRAIN", bad}});
    BOOST_TEST(result.exit_code == 2, "value " << bad);
    BOOST_TEST(result.out.find("SHUTDOWN_DRAIN") != std::string::npos, "value " << bad << ": " << result.out);
  }
}

BOOST_AUTO_TEST_SUITE_END()
