// Endpoints as units, reached without a socket or an App: GET /rides/{id} against a real
// database, the route table that App and the I/O thread's triage both read, and the error
// boundary's answer for whatever an endpoint throws (a client's mistake is never a 500).
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <functional>
#include <pqxx/pqxx>
#include <string>

#include "common/api/authenticator.hpp"
#include "common/api/get_ride_endpoint.hpp"
#include "common/api/outcome_answers.hpp"
#include "common/api_app/routes.hpp"
#include "common/api_requests/api_error.hpp"
#include "common/auth/token_cache.hpp"
#include "common/auth/users.hpp"
#include "common/db/connection_pool.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

using namespace std::chrono_literals;
using rr::api::ApiError;

namespace {

rr::http::Request get(const std::string& path, const std::string& token) {
  rr::http::Request request;
  request.method = "GET";
  request.target = request.path = path;
  request.headers = {{"Authorization", "Bearer " + token}};
  request.remote_address = "127.0.0.1";
  return request;
}

// GET /rides/{id} built as App builds it, with only its collaborators: a pool and an
// authenticator over a token cache and a throttle of failures.
struct GetRideUnit {
  rr::test::TestDatabase db;
  rr::db::ConnectionPool pool{db.url(), db.session_options(), 2, 1s};
  rr::auth::TokenCache tokens{100, 60s};
  rr::auth::AuthFailureThrottle failed_auth{{}};
  rr::api::Authenticator authenticator{pool, tokens, failed_auth};
  rr::api::GetRideEndpoint endpoint{pool, authenticator};
  rr::auth::CreatedUser alice = rr::auth::create_user(db.conn(), "alice@example.com", "cus_alice");
  rr::auth::CreatedUser bob = rr::auth::create_user(db.conn(), "bob@example.com", "cus_bob");
  std::string ride_id = add_ride(alice.user.id);

  std::string add_ride(std::int64_t user_id) {
    pqxx::work tx(db.conn());
    auto key_id =
        tx.exec_params(
              "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
              "recovery_point, user_id, locked_at) VALUES ($1, 'POST', '{}', '/rides', 'ride_created', $2, NULL) "
              "RETURNING id",
              rr::test::new_key(), user_id)[0][0]
            .as<std::int64_t>();
    auto id = tx.exec_params(
                    "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id) "
                    "VALUES ($1, 1, 2, 3, 4, $2) RETURNING id",
                    key_id, user_id)[0][0]
                  .as<std::string>();
    tx.commit();
    return id;
  }
};

int status_of_api_error(const std::function<void()>& call) {
  try {
    call();
  } catch (const ApiError& e) {
    return e.status;
  }
  return 0;
}

// An endpoint that throws what it is given, for the error boundary.
class ThrowingEndpoint : public rr::api::Endpoint {
 public:
  explicit ThrowingEndpoint(std::function<void()> throw_it) : throw_it_(std::move(throw_it)) {}
  rr::http::Response handle(const rr::http::Request&, const rr::flows::PathArguments&) override {
    throw_it_();
    return rr::http::Response{200, "application/json", {}, "{}"};
  }

 private:
  std::function<void()> throw_it_;
};

rr::http::Response through_the_boundary(std::function<void()> throw_it) {
  ThrowingEndpoint endpoint(std::move(throw_it));
  rr::http::Request request;
  return rr::api::within_error_boundary("test", [&] { return endpoint.handle(request, {}); });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(get_ride_endpoint)

BOOST_FIXTURE_TEST_CASE(answers_the_callers_own_ride_and_404_for_anyone_elses, GetRideUnit) {
  auto mine = endpoint.handle(get("/rides/" + ride_id, alice.token), {ride_id});
  BOOST_TEST(mine.status == 200);
  BOOST_TEST(mine.body.find("\"id\":" + ride_id) != std::string::npos, mine.body);
  BOOST_TEST(mine.body.find("\"cancelled_at\":null") != std::string::npos, mine.body);

  BOOST_TEST(status_of_api_error([&] { endpoint.handle(get("/rides/" + ride_id, bob.token), {ride_id}); }) == 404);
  BOOST_TEST(status_of_api_error([&] { endpoint.handle(get("/rides/999999", alice.token), {"999999"}); }) == 404);
  // The route's argument takes the rest of the path: what cannot be a ride's id is no such ride.
  for (std::string id : {"abc", "1/x", "", "-1"}) {
    BOOST_TEST(status_of_api_error([&] { endpoint.handle(get("/rides/" + id, alice.token), {id}); }) == 404, id);
  }
}

BOOST_FIXTURE_TEST_CASE(refuses_an_unknown_token_with_401_after_looking_it_up, GetRideUnit) {
  std::string unknown = "rr_" + std::string(64, 'b');
  BOOST_TEST(!endpoint.answer_in_memory(get("/rides/" + ride_id, unknown), {ride_id}));  // its form is fine
  BOOST_TEST(status_of_api_error([&] { endpoint.handle(get("/rides/" + ride_id, unknown), {ride_id}); }) == 401);
}

BOOST_FIXTURE_TEST_CASE(answers_validation_from_memory_without_a_connection, GetRideUnit) {
  auto held = pool.acquire();
  auto also_held = pool.acquire();  // the pool is empty: a lookup would wait for its timeout
  auto started = std::chrono::steady_clock::now();
  BOOST_TEST(status_of_api_error([&] { endpoint.answer_in_memory(get("/rides/1", "not-a-token"), {"1"}); }) == 401);
  BOOST_TEST(status_of_api_error([&] { endpoint.answer_in_memory(get("/rides/abc", alice.token), {"abc"}); }) == 404);
  BOOST_TEST((std::chrono::steady_clock::now() - started < 500ms));
}

BOOST_FIXTURE_TEST_CASE(a_database_outage_is_a_503_with_retry_after_through_the_boundary, GetRideUnit) {
  db.refuse_connections(true);
  auto response = rr::api::within_error_boundary(
      "test", [&] { return endpoint.handle(get("/rides/" + ride_id, alice.token), {ride_id}); });
  db.refuse_connections(false);
  BOOST_TEST(response.status == 503, response.body);
  BOOST_TEST(response.header("Retry-After").has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(route_table)

BOOST_AUTO_TEST_CASE(routes_each_method_and_path_to_one_endpoint) {
  auto ride = rr::api::find_route("GET", "/rides/42");
  BOOST_REQUIRE(ride.route);
  BOOST_TEST(ride.route->path_template == "/rides/{id}");
  BOOST_TEST(ride.arguments == rr::flows::PathArguments{"42"});
  BOOST_TEST(ride.route->needs_user);

  auto below = rr::api::find_route("GET", "/rides/1/x");
  BOOST_REQUIRE(below.route);
  BOOST_TEST(below.route->path_template == "/rides/{id}");
  BOOST_TEST(below.arguments == rr::flows::PathArguments{"1/x"});

  auto cancel = rr::api::find_route("POST", "/rides/7/cancel");
  BOOST_REQUIRE(cancel.route);
  BOOST_REQUIRE(cancel.route->flow);
  BOOST_TEST(cancel.route->flow->name == "cancel_ride");
  BOOST_TEST(cancel.arguments == rr::flows::PathArguments{"7"});

  auto ready = rr::api::find_route("GET", "/readyz");
  BOOST_REQUIRE(ready.route);
  BOOST_TEST((ready.route->lane == rr::http::Lane::control));
  BOOST_TEST(!ready.route->needs_user);
}

BOOST_AUTO_TEST_CASE(another_method_is_405_with_allow_and_an_unknown_path_404) {
  auto list = rr::api::find_route("DELETE", "/rides");
  BOOST_TEST(!list.route);
  BOOST_TEST(list.allow == "GET, POST");
  auto refusal = rr::api::routing_refusal(list);
  BOOST_TEST(refusal.status == 405);
  BOOST_TEST(refusal.header("Allow").value_or("") == "GET, POST");

  // The cancel's template is matched before GET /rides/{id}'s, which would take its path too.
  auto cancel = rr::api::find_route("GET", "/rides/7/cancel");
  BOOST_TEST(!cancel.route);
  BOOST_TEST(cancel.allow == "POST");

  // The rider's home page is GET / only (common/web/).
  auto home = rr::api::find_route("POST", "/");
  BOOST_TEST(!home.route);
  BOOST_TEST(home.allow == "GET");

  for (const char* path : {"/metrics", "/x", "/ridesX", "", "/my/rides"}) {
    auto unknown = rr::api::find_route("GET", path);
    BOOST_TEST(!unknown.route, path);
    BOOST_TEST(rr::api::routing_refusal(unknown).status == 404, path);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(error_boundary)

BOOST_AUTO_TEST_CASE(a_clients_mistake_keeps_its_own_status_never_500) {
  for (int status : {400, 401, 404, 409, 415, 422, 429}) {
    auto response = through_the_boundary([&] { throw ApiError(status, "invalid_request_error", "No."); });
    BOOST_TEST(response.status == status);
    BOOST_TEST(response.body.find("\"invalid_request_error\"") != std::string::npos, response.body);
  }
  auto unauthorized = through_the_boundary([] { throw ApiError(401, "authentication_error", "Who?"); });
  BOOST_TEST(unauthorized.header("WWW-Authenticate").value_or("") == "Bearer");
  auto in_flight = through_the_boundary([] { throw ApiError(409, "idempotency_error", "Busy.", 3); });
  BOOST_TEST(in_flight.header("Retry-After").value_or("") == "3");
}

BOOST_AUTO_TEST_CASE(an_outage_or_an_exhausted_pool_is_503_with_retry_after) {
  auto outage = through_the_boundary([] { throw pqxx::broken_connection("server closed the connection"); });
  BOOST_TEST(outage.status == 503, outage.body);
  BOOST_TEST(outage.header("Retry-After").has_value());
  auto busy = through_the_boundary([] { throw rr::db::PoolExhausted("no connection within 5 s"); });
  BOOST_TEST(busy.status == 503, busy.body);
  BOOST_TEST(busy.header("Retry-After").value_or("") == "1");
}

BOOST_AUTO_TEST_CASE(a_conflict_with_a_concurrent_transaction_is_503_with_retry_after) {
  // What a batch of new keys that deadlocked hands each of its requests: nothing was written.
  auto deadlock = through_the_boundary([] { throw pqxx::deadlock_detected("deadlock detected"); });
  BOOST_TEST(deadlock.status == 503, deadlock.body);
  BOOST_TEST(deadlock.header("Retry-After").value_or("") == "1");
  BOOST_TEST(deadlock.body.find("same Idempotency-Key") != std::string::npos, deadlock.body);
}

BOOST_AUTO_TEST_CASE(only_what_is_left_is_a_500_and_an_answer_passes_through) {
  auto bug = through_the_boundary([] { throw std::logic_error("a bug"); });
  BOOST_TEST(bug.status == 500);
  BOOST_TEST(bug.body.find("a bug") == std::string::npos, bug.body);  // internals stay in the log
  BOOST_TEST(through_the_boundary([] {}).status == 200);
}

BOOST_AUTO_TEST_SUITE_END()
