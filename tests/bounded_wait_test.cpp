// The bounded wait (issue 16, Prefer: wait=N) over real sockets against the real API processes:
// a request for a key in flight waits for the first request's result, in the same process or in
// another one on the same database, instead of 409; it gives up at min(N, IDEMPOTENCY_MAX_WAIT);
// it holds no worker and no database connection while it waits; and a first request that ends
// without finishing leaves the waiter to run the key itself, as a retry would.
#include <boost/test/unit_test.hpp>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "common/auth/users.hpp"
#include "common/http/client.hpp"
#include "support/api_process.hpp"
#include "support/ride_fixture.hpp"

using namespace rr::test;
using namespace std::chrono_literals;
namespace http = rr::http;
using Clock = std::chrono::steady_clock;

namespace {

long millis(Clock::duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

struct Timed {
  http::ClientResponse response;
  long elapsed_ms = 0;
};

// POST /rides, with `Prefer: wait=N` when `wait` is given, timed.
Timed post_ride(const ApiProcess& api, const std::string& token, const std::string& key,
                std::optional<std::string> wait = std::nullopt) {
  auto request = api.ride_request(token, key, RideFixture::kDefaultForm, 20s);
  if (wait) request.headers.emplace_back("Prefer", "wait=" + *wait);
  auto started = Clock::now();
  auto response = http::send(request);
  return {std::move(response), millis(Clock::now() - started)};
}

std::future<Timed> post_ride_async(const ApiProcess& api, const std::string& token, const std::string& key,
                                   std::optional<std::string> wait = std::nullopt) {
  return std::async(std::launch::async, [&api, token, key, wait] { return post_ride(api, token, key, wait); });
}

struct BoundedWaitFixture : ApiFixture {
  void until_locked(const std::string& key) { db.until_key_locked(key); }
  std::string rides_of_key(const std::string& key) {
    return db.scalar(
        "SELECT count(*) FROM rides r JOIN idempotency_keys k ON k.id = r.idempotency_key_id "
        "WHERE k.idempotency_key = '" +
        key + "'");
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(bounded_wait, BoundedWaitFixture)

BOOST_AUTO_TEST_CASE(a_waiter_in_another_process_gets_the_first_requests_result_as_a_replay) {
  start_api();
  ApiProcess other(db, stripe);
  stripe.configure("{\"latency_ms\":1500}");
  auto key = new_key();
  auto first = post_ride_async(*api, token, key);
  until_locked(key);
  auto waited = post_ride(other, token, key, "5");
  auto original = first.get();

  BOOST_TEST(original.response.status == 201);
  BOOST_TEST(waited.response.status == 201);
  BOOST_TEST(waited.response.body == original.response.body);
  BOOST_TEST(waited.response.header("Idempotent-Replayed") == "true");
  BOOST_TEST(waited.response.header("Preference-Applied") == "wait=5");
  BOOST_TEST(waited.response.header("Idempotency-Key") == key);
  // Woken by the poll of the key's row, not by its deadline (whose re-run would replay too).
  BOOST_TEST(waited.elapsed_ms < 4500);
  BOOST_TEST(original.response.header("Preference-Applied").empty());
  BOOST_TEST(stripe.charges() == 1);
  BOOST_TEST(rides_of_key(key) == "1");
}

BOOST_AUTO_TEST_CASE(a_waiter_in_the_same_process_is_woken_by_the_run_that_ends) {
  start_api();
  stripe.configure("{\"latency_ms\":1500}");
  auto key = new_key();
  auto first = post_ride_async(*api, token, key);
  until_locked(key);
  auto waited = post_ride(*api, token, key, "5");
  auto original = first.get();

  BOOST_TEST(original.response.status == 201);
  BOOST_TEST(waited.response.status == 201);
  BOOST_TEST(waited.response.body == original.response.body);
  BOOST_TEST(waited.response.header("Idempotent-Replayed") == "true");
  BOOST_TEST(waited.response.header("Preference-Applied") == "wait=5");
  BOOST_TEST(waited.elapsed_ms < 4500);  // woken when the run ended, not at its deadline
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(a_waiter_whose_wait_runs_out_gets_409_with_retry_after) {
  start_api();
  stripe.configure("{\"latency_ms\":3000}");
  auto key = new_key();
  auto first = post_ride_async(*api, token, key);
  until_locked(key);
  auto waited = post_ride(*api, token, key, "1");

  BOOST_TEST(waited.response.status == 409);
  BOOST_TEST(waited.elapsed_ms >= 1000);
  BOOST_TEST(waited.elapsed_ms < 2900);  // gave up at its wait, not when the first one ended
  BOOST_TEST(waited.response.header("Retry-After") == "1");
  BOOST_TEST(waited.response.header("Preference-Applied").empty());
  BOOST_TEST(waited.response.body.find("idempotency_error") != std::string::npos);
  BOOST_TEST(first.get().response.status == 201);
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(idempotency_max_wait_caps_the_wait_a_client_asks_for) {
  start_api({{"IDEMPOTENCY_MAX_WAIT", "1"}});
  stripe.configure("{\"latency_ms\":3000}");
  auto key = new_key();
  auto first = post_ride_async(*api, token, key);
  until_locked(key);
  auto waited = post_ride(*api, token, key, "30");

  BOOST_TEST(waited.response.status == 409);
  BOOST_TEST(waited.elapsed_ms >= 1000);
  BOOST_TEST(waited.elapsed_ms < 2900);
  BOOST_TEST(first.get().response.status == 201);
}

BOOST_AUTO_TEST_CASE(the_cap_is_the_wait_applied_when_the_first_request_ends_in_time) {
  start_api({{"IDEMPOTENCY_MAX_WAIT", "3"}});
  stripe.configure("{\"latency_ms\":1000}");
  auto key = new_key();
  auto first = post_ride_async(*api, token, key);
  until_locked(key);
  auto waited = post_ride(*api, token, key, "30");
  BOOST_TEST(first.get().response.status == 201);
  BOOST_TEST(waited.response.status == 201);
  BOOST_TEST(waited.response.header("Preference-Applied") == "wait=3");
}

BOOST_AUTO_TEST_CASE(without_a_wait_or_with_waiting_off_the_answer_is_409_at_once) {
  start_api();
  stripe.configure("{\"latency_ms\":2000}");
  auto key = new_key();
  auto first = post_ride_async(*api, token, key);
  until_locked(key);
  auto plain = post_ride(*api, token, key);
  BOOST_TEST(plain.response.status == 409);
  BOOST_TEST(plain.elapsed_ms < 1000);
  BOOST_TEST(plain.response.header("Retry-After") == "1");
  auto unparsable = post_ride(*api, token, key, "soon");
  BOOST_TEST(unparsable.response.status == 409);
  BOOST_TEST(unparsable.elapsed_ms < 1000);
  auto zero = post_ride(*api, token, key, "0");
  BOOST_TEST(zero.response.status == 409);
  BOOST_TEST(zero.elapsed_ms < 1000);
  BOOST_TEST(first.get().response.status == 201);

  start_api({{"IDEMPOTENCY_MAX_WAIT", "0"}});
  auto second_key = new_key();
  auto second = post_ride_async(*api, token, second_key);
  until_locked(second_key);
  auto off = post_ride(*api, token, second_key, "5");
  BOOST_TEST(off.response.status == 409);
  BOOST_TEST(off.elapsed_ms < 1000);
  BOOST_TEST(second.get().response.status == 201);
}

BOOST_AUTO_TEST_CASE(waiters_hold_no_worker_and_no_database_connection) {
  // The first requests run in another process; this one has two workers and two connections for
  // ten waiters and one more user's requests, which must not queue behind the waiters.
  start_api();
  ApiProcess small(db, stripe, {{"API_WORKERS", "2"}, {"DATABASE_POOL_SIZE", "2"}});
  stripe.configure("{\"latency_ms\":4000}");
  constexpr int kWaiters = 10;
  std::vector<std::string> tokens, keys;
  for (int i = 0; i < kWaiters; ++i) {
    tokens.push_back(rr::auth::create_user(db.conn(), "waiter" + std::to_string(i) + "@example.com",
                                           "cus_waiter" + std::to_string(i))
                         .token);
    keys.push_back(new_key());
  }
  std::vector<std::future<Timed>> firsts, waiters;
  for (int i = 0; i < kWaiters; ++i) firsts.push_back(post_ride_async(*api, tokens[i], keys[i]));
  for (const auto& key : keys) until_locked(key);
  auto started = Clock::now();
  for (int i = 0; i < kWaiters; ++i) waiters.push_back(post_ride_async(small, tokens[i], keys[i], "10"));
  std::this_thread::sleep_for(300ms);  // they reach the API and park

  // Alice lists her rides (a worker and a connection) and books one (a worker, a connection and
  // the provider's 4 s) while all ten wait.
  auto list_started = Clock::now();
  auto listed = small.get("/rides", token);
  auto list_ms = millis(Clock::now() - list_started);
  BOOST_TEST(listed.status == 200);
  BOOST_TEST(list_ms < 1000);
  // ... answered while every waiter was still parked (the first requests need 4 s).
  int still_waiting = 0;
  for (auto& waiter : waiters) still_waiting += waiter.wait_for(0ms) != std::future_status::ready;
  BOOST_TEST(still_waiting == kWaiters);
  auto fresh = post_ride(small, token, new_key());
  BOOST_TEST(fresh.response.status == 201);

  for (int i = 0; i < kWaiters; ++i) {
    auto original = firsts[i].get();
    auto waited = waiters[i].get();
    BOOST_TEST(original.response.status == 201);
    BOOST_TEST(waited.response.status == 201);
    BOOST_TEST(waited.response.body == original.response.body);
    BOOST_TEST(waited.response.header("Idempotent-Replayed") == "true");
    BOOST_TEST(waited.response.header("Preference-Applied") == "wait=10");
  }
  BOOST_TEST(millis(Clock::now() - started) < 9000);
  BOOST_TEST(stripe.charges() == kWaiters + 1);
}

BOOST_AUTO_TEST_CASE(a_first_request_that_ends_unfinished_leaves_the_waiter_to_run_the_key) {
  start_api();
  // The first charge attempt fails at the provider (500: unknown outcome, the key is let go at its
  // recovery point); the waiter then runs the key as a retry would, and the charge happens once.
  stripe.configure("{\"latency_ms\":1000,\"fail_next\":1}");
  auto key = new_key();
  auto first = post_ride_async(*api, token, key);
  until_locked(key);
  auto waited = post_ride(*api, token, key, "8");
  auto original = first.get();

  BOOST_TEST(original.response.status == 503);
  BOOST_TEST(waited.response.status == 201);
  BOOST_TEST(waited.response.header("Idempotent-Replayed").empty());  // it ran the key itself
  BOOST_TEST(waited.response.header("Preference-Applied") == "wait=8");
  BOOST_TEST(stripe.charges() == 1);
  BOOST_TEST(rides_of_key(key) == "1");
  auto retried = post_ride(*api, token, key);
  BOOST_TEST(retried.response.status == 201);
  BOOST_TEST(retried.response.body == waited.response.body);
}

BOOST_AUTO_TEST_SUITE_END()
