// /readyz reports whether the API can serve: the database answers (pinged on a connection of its
// own) and it is not draining. A busy request pool is not unreadiness: a balancer that took every
// busy API out would turn overload into an outage. Also runs through PgBouncer.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <thread>

#include "support/ride_fixture.hpp"

using namespace std::chrono_literals;

namespace {

rr::http::Response readyz(rr::api::App& app) {
  rr::http::Request request;
  request.method = "GET";
  request.target = request.path = "/readyz";
  request.remote_address = "127.0.0.1";
  return app.handle(request);
}

// Polls /readyz until it answers `status` or `timeout` passes; returns the last status.
int readyz_until(rr::api::App& app, int status, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int last = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    last = readyz(app).status;
    if (last == status) return last;
    std::this_thread::sleep_for(100ms);
  }
  return last;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(readiness)

BOOST_AUTO_TEST_CASE(readyz_answers_200_at_once_while_every_pooled_connection_is_busy) {
  rr::test::RideFixture f;
  auto settings = f.settings(5);
  settings.database_pool_size = 1;
  rr::api::App app(settings);
  BOOST_REQUIRE_EQUAL(readyz_until(app, 200, 10s), 200);
  auto held = app.pool().acquire();  // the pool's only connection, as a long request would hold it
  // Held throughout: a /readyz that needed a pooled connection could only wait for it and give up,
  // never answer 200, so the answer itself shows that it did not queue behind the busy pool.
  auto response = readyz(app);
  BOOST_TEST(response.status == 200, response.body);
}

BOOST_AUTO_TEST_CASE(readyz_is_503_while_the_database_refuses_sessions_and_200_once_it_is_back) {
  rr::test::RideFixture f;
  BOOST_REQUIRE_EQUAL(readyz_until(*f.app, 200, 10s), 200);
  f.db.refuse_connections(true);
  // Within the staleness bound (3 s) plus a ping; through PgBouncer the ping waits for a server.
  BOOST_TEST(readyz_until(*f.app, 503, 15s) == 503);
  f.db.refuse_connections(false);
  BOOST_TEST(readyz_until(*f.app, 200, 15s) == 200);
}

BOOST_AUTO_TEST_SUITE_END()
