// No rider can take every waiter, over real sockets against the real API
// process: the rider pages count against API_MAX_IN_FLIGHT_PER_USER like the API (a page parked
// on a key in flight keeps its place), and one rider's flood of waits, through the API
// (Prefer: wait) and the pages (POST /book of a key in flight), is cut at
// IDEMPOTENCY_MAX_WAITERS_PER_USER while another user's wait on its own key ends in its replay.
#include <csignal>

#include <boost/test/unit_test.hpp>
#include <future>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/auth/users.hpp"
#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "support/api_process.hpp"
#include "support/polling.hpp"
#include "support/process.hpp"
#include "support/raw_connection.hpp"
#include "support/ride_fixture.hpp"
#include "support/text.hpp"

using namespace rr::test;
using namespace std::chrono_literals;
namespace http = rr::http;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kMaxWaitersPerUser = 64;  // the setting's default
// More than the process's 1,024 waiters: without the per-user bound this flood fills the registry.
constexpr int kFloodPerRoute = 560;

const std::string kCoordinates = "origin_lat=37.7749&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712";

// A signed-in rider's session, as the pages need it: the Cookie header and the session's CSRF token.
struct PageSession {
  std::string cookie;
  std::string csrf_token;

  // POST /book of the ride form with this key, as the browser sends it.
  std::string book_body(const std::string& key) const {
    return kCoordinates + "&" + http::form_encode({{"idempotency_key", key}, {"csrf_token", csrf_token}});
  }
  http::ClientRequest book(const ApiProcess& api, const std::string& key) const {
    return {"POST",
            api.url("/book"),
            {{"Cookie", cookie}, {"Content-Type", "application/x-www-form-urlencoded"}},
            book_body(key),
            40s};
  }
  http::ClientRequest home(const ApiProcess& api) const { return {"GET", api.url("/"), {{"Cookie", cookie}}, "", 10s}; }
};

// The value of the cookie `name` a response sets ("" when none).
std::string cookie_set(const http::ClientResponse& response, const std::string& name) {
  for (const auto& [header, value] : response.headers) {
    if (http::iequals(header, "Set-Cookie") && value.starts_with(name + "=")) {
      return value.substr(name.size() + 1, value.find(';') - name.size() - 1);
    }
  }
  return "";
}

// Signs in with the API token as the sign-in form does (its double-submit CSRF pair).
PageSession sign_in(const ApiProcess& api, const std::string& token) {
  auto form = http::send({"GET", api.url("/"), {}, "", 10s});
  BOOST_REQUIRE_EQUAL(form.status, 200);
  auto csrf_cookie = cookie_set(form, "rr_csrf");
  auto signed_in =
      http::send({"POST",
                  api.url("/session"),
                  {{"Cookie", "rr_csrf=" + csrf_cookie}, {"Content-Type", "application/x-www-form-urlencoded"}},
                  http::form_encode({{"token", token}, {"csrf_token", input_value(form.body, "csrf_token")}}),
                  10s});
  BOOST_REQUIRE_EQUAL(signed_in.status, 303);
  PageSession session{"rr_session=" + cookie_set(signed_in, "rr_session"), ""};
  auto home = http::send(session.home(api));
  BOOST_REQUIRE_EQUAL(home.status, 200);
  session.csrf_token = input_value(home.body, "csrf_token");
  BOOST_REQUIRE(!session.csrf_token.empty());
  return session;
}

// A request written on a connection of its own and not read: its answer waits there, so a
// thousand of them cost the test no thread each.
std::unique_ptr<RawConnection> send_unread(std::uint16_t port, const std::string& head_lines, const std::string& body) {
  auto connection = std::make_unique<RawConnection>(port);
  connection->send(head_lines + "Host: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
                   "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  return connection;
}

std::string waits(const std::string& outcome) {
  return "rocket_rides_idempotency_waits_total{outcome=\"" + outcome + "\"}";
}

struct FairWaitersFixture : ApiFixture {
  std::string bob;
  std::uint16_t metrics_port = 0;

  FairWaitersFixture() { bob = rr::auth::create_user(db.conn(), "bob@example.com", "cus_bob").token; }

  void start_api_with_metrics(EnvChanges extra) {
    metrics_port = free_port();
    extra["METRICS_PORT"] = std::to_string(metrics_port);
    start_api(extra);
    BOOST_REQUIRE_MESSAGE(wait_for_port(metrics_port, 5s), "no metrics port: " << api->output());
  }

  std::string metrics() {
    return http::send({"GET", "http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics", {}, "", 10s}).body;
  }

  std::future<http::ClientResponse> send_async(http::ClientRequest request) {
    return std::async(std::launch::async, [request = std::move(request)] { return http::send(request); });
  }

  // A graceful stop after the test's traffic: exit 0, and no sanitizer report from the API (a
  // place or a slot kept past its request would show as a leak or a use after free here).
  void expect_clean_stop() {
    api->signal(SIGTERM);
    BOOST_TEST(api->wait(20s).value_or(-1) == 0);
    BOOST_TEST(api->output().find("Sanitizer") == std::string::npos, api->output());
  }

  http::ClientRequest ride_waiting(const std::string& token, const std::string& key, int wait_seconds) {
    auto request = api->ride_request(token, key, RideFixture::kDefaultForm, 20s);
    request.headers.emplace_back("Prefer", "wait=" + std::to_string(wait_seconds));
    return request;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(fair_waiters, FairWaitersFixture)

BOOST_AUTO_TEST_CASE(pages_count_against_the_users_in_flight_limit_and_a_parked_page_keeps_its_place) {
  start_api({{"API_MAX_IN_FLIGHT_PER_USER", "2"}});
  auto alice = sign_in(*api, token);
  stripe.configure("{\"latency_ms\":2500}");
  auto key = new_key();
  // Alice's two places: the booking at the provider, and her second click on it, parked.
  auto booking = send_async(alice.book(*api, key));
  db.until_key_locked(key);
  auto second_click = send_async(alice.book(*api, key));
  std::this_thread::sleep_for(500ms);  // it reaches the key and parks
  BOOST_REQUIRE(second_click.wait_for(0ms) != std::future_status::ready);

  auto api_call = api->get("/rides", token);
  BOOST_TEST(api_call.status == 429, api_call.body);
  BOOST_TEST(api_call.header("Retry-After") == "1");
  BOOST_TEST(api_call.body.find("\"type\":\"rate_limit_error\"") != std::string::npos, api_call.body);
  auto page = http::send(alice.home(*api));
  BOOST_TEST(page.status == 429);
  BOOST_TEST(page.header("Retry-After") == "1");
  BOOST_TEST(page.header("Content-Type").starts_with("text/html"));
  BOOST_TEST(api->get("/rides", bob).status == 200);  // the limit is alice's

  auto first = booking.get();
  auto second = second_click.get();
  BOOST_TEST(first.status == 303);
  BOOST_TEST(second.status == 303);
  BOOST_TEST(second.header("Location") == first.header("Location"));
  BOOST_TEST(stripe.charges() == 1);
  BOOST_TEST(http::send(alice.home(*api)).status == 200);  // her places came back
  expect_clean_stop();
}

BOOST_AUTO_TEST_CASE(one_riders_flood_of_waiters_leaves_another_users_wait_its_replay) {
  // Only the waiter bound stands between alice's flood and the registry: her in-flight limit and
  // the queue are far above the flood.
  // The flood's waits, and the provider calls held below, outlast the test's checks however slow
  // the machine: a parked request has not answered when they read, and no charge has timed out.
  start_api_with_metrics({{"API_MAX_IN_FLIGHT_PER_USER", "100000"},
                          {"API_MAX_QUEUED_REQUESTS", "100000"},
                          {"IDEMPOTENCY_MAX_WAIT", "300"},
                          {"STRIPE_TIMEOUT", "300"}});
  auto alice = sign_in(*api, token);
  // Alice's two keys stay at the provider until the test lets them go: the flood finds them in
  // flight however long a loaded machine takes to park or refuse it (it once took over 20 s).
  stripe.configure("{\"hold\":1}");
  auto api_key = new_key();
  auto page_key = new_key();
  auto alice_ride = send_async(api->ride_request(token, api_key, RideFixture::kDefaultForm, 300s));
  auto alice_booking = send_async(alice.book(*api, page_key));
  db.until_key_locked(api_key);
  db.until_key_locked(page_key);

  std::vector<std::unique_ptr<RawConnection>> api_flood, page_flood;
  for (int i = 0; i < kFloodPerRoute; ++i) {
    api_flood.push_back(send_unread(port,
                                    "POST /rides HTTP/1.1\r\nAuthorization: Bearer " + token +
                                        "\r\nIdempotency-Key: " + api_key + "\r\nPrefer: wait=300\r\n",
                                    RideFixture::kDefaultForm));
    page_flood.push_back(
        send_unread(port, "POST /book HTTP/1.1\r\nCookie: " + alice.cookie + "\r\n", alice.book_body(page_key)));
  }
  // Every request of the flood parked or refused.
  constexpr int kFlood = 2 * kFloodPerRoute;
  auto flood_sent = Clock::now();
  std::string page;
  for (auto until = Clock::now() + 240s; Clock::now() < until; std::this_thread::sleep_for(100ms)) {
    page = metrics();
    if (metric_sample(page, waits("waiting"), 0) + metric_sample(page, waits("refused"), 0) +
            metric_sample(page, waits("refused_per_user"), 0) >=
        kFlood) {
      break;
    }
  }
  BOOST_TEST_MESSAGE("the flood was parked or refused " << millis(Clock::now() - flood_sent)
                                                        << " ms after it was sent");
  BOOST_TEST(metric_sample(page, waits("waiting"), 0) == kMaxWaitersPerUser);
  BOOST_TEST(metric_sample(page, waits("refused_per_user"), 0) == kFlood - kMaxWaitersPerUser);
  BOOST_TEST(metric_sample(page, waits("refused"), 0) == 0);

  // Bob's own key in flight, and his wait for it: parked (not the 409 of a full registry), then
  // a replay once the provider lets every held charge go.
  auto bob_key = new_key();
  auto bob_ride = send_async(api->ride_request(bob, bob_key, RideFixture::kDefaultForm, 300s));
  db.until_key_locked(bob_key);
  auto waited = send_async(ride_waiting(bob, bob_key, 300));
  const auto parked_before_bob = metric_sample(page, waits("waiting"), 0);
  for (auto until = Clock::now() + 60s;
       Clock::now() < until && metric_sample(metrics(), waits("waiting"), 0) == parked_before_bob;) {
    std::this_thread::sleep_for(50ms);
  }
  BOOST_TEST(metric_sample(metrics(), waits("waiting"), 0) == parked_before_bob + 1);
  BOOST_TEST((waited.wait_for(0ms) != std::future_status::ready));
  stripe.configure("{\"hold\":0}");
  auto original = bob_ride.get();
  auto replay = waited.get();
  BOOST_TEST(original.status == 201);
  BOOST_TEST(replay.status == 201, replay.body);
  BOOST_TEST(replay.header("Idempotent-Replayed") == "true");
  BOOST_TEST(replay.header("Preference-Applied") == "wait=300");
  BOOST_TEST(replay.body == original.body);

  // The flood's refusals were answered at once: 429 with Retry-After through the API, the 409 page
  // through the pages; the parked ones have their replays of alice's keys, let go above, or are
  // about to (no answer yet).
  std::map<int, int> api_statuses, page_statuses;
  for (auto& connection : api_flood) {
    auto answer = connection->read_response(20ms);
    ++api_statuses[status_of(answer)];
    if (status_of(answer) == 429) {
      BOOST_TEST(header_of(answer, "Retry-After") == "1");
      BOOST_TEST(body_of(answer).find("\"type\":\"rate_limit_error\"") != std::string::npos);
    }
  }
  for (auto& connection : page_flood) {
    auto answer = connection->read_response(20ms);
    ++page_statuses[status_of(answer)];
    if (status_of(answer) == 409) {
      BOOST_TEST(header_of(answer, "Retry-After") == "1");
      BOOST_TEST(header_of(answer, "Content-Type").starts_with("text/html"));
    }
  }
  BOOST_TEST(api_statuses[429] + page_statuses[409] == kFlood - kMaxWaitersPerUser);
  BOOST_TEST(api_statuses[0] + api_statuses[201] + api_statuses[429] == kFloodPerRoute);
  BOOST_TEST(page_statuses[0] + page_statuses[303] + page_statuses[409] == kFloodPerRoute);

  api_flood.clear();
  page_flood.clear();
  BOOST_TEST(alice_ride.get().status == 201);
  BOOST_TEST(alice_booking.get().status == 303);
  expect_clean_stop();
}

BOOST_AUTO_TEST_SUITE_END()
