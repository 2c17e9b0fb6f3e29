// The bounded wait (Prefer: wait=N) over real sockets against the real API processes:
// a request for a key in flight waits for the first request's result, in the same process or in
// another one on the same database, instead of 409; it gives up at min(N, IDEMPOTENCY_MAX_WAIT);
// it holds no worker and no database connection while it waits; and a first request that ends
// without finishing leaves the waiter to run the key itself, as a retry would. In this process,
// over the real registry of waiters and the server's scheduler: a request holds its place among
// its user's waiters from its first wait until it is answered, even when woken while the key is
// still in flight.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "common/api/bounded_wait.hpp"
#include "common/api/outcome_answers.hpp"
#include "common/auth/users.hpp"
#include "common/db/connection_pool.hpp"
#include "common/http/client.hpp"
#include "common/http/request_scheduler.hpp"
#include "common/idempotency/key_waiters.hpp"
#include "support/api_process.hpp"
#include "support/plain_text.hpp"
#include "support/polling.hpp"
#include "support/ride_fixture.hpp"

using namespace rr::test;
using namespace std::chrono_literals;
namespace http = rr::http;
using Clock = std::chrono::steady_clock;

namespace {

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
  // A row of alice's for `key`, locked now: the registry's poller sees the key in flight and wakes
  // nobody by itself. Returns alice's user id.
  std::int64_t lock_key_of_alice(const std::string& key) {
    auto user_id = std::stoll(db.scalar("SELECT id FROM users WHERE email = 'alice@example.com'"));
    db.scalar(
        "INSERT INTO idempotency_keys (idempotency_key, locked_at, request_method, request_params, request_path, "
        "recovery_point, user_id) VALUES ('" +
        key + "', now(), 'POST', '{}', '/rides', 'started', " + std::to_string(user_id) + ")");
    return user_id;
  }
};

using rr::idempotency::KeyWaiters;

rr::idempotency::KeyWaitersOptions places_per_user(std::size_t places) {
  rr::idempotency::KeyWaitersOptions options;
  options.max_waiters_per_user = places;
  return options;
}

bool holds_a_place(const std::variant<std::shared_ptr<KeyWaiters::Place>, KeyWaiters::Refusal>& reserved) {
  return std::holds_alternative<std::shared_ptr<KeyWaiters::Place>>(reserved);
}

// One request's answer, handed back by the scheduler from whichever thread has it.
class AwaitedAnswer {
 public:
  // The callable RequestScheduler::run takes (copyable, called once).
  auto callback() {
    return [promise = promise_](http::Response response) { promise->set_value(std::move(response)); };
  }
  bool arrives_within(std::chrono::milliseconds timeout) {
    return future_.wait_for(timeout) == std::future_status::ready;
  }
  http::Response get() { return future_.get(); }

 private:
  std::shared_ptr<std::promise<http::Response>> promise_ = std::make_shared<std::promise<http::Response>>();
  std::future<http::Response> future_ = promise_->get_future();
};

// The waiting part of a flow's run (FlowEndpoint::run) for one key, without the flow: while the
// test holds the key in flight, a request waits for it (Prefer: wait=10) or is refused; once the
// test lets it go, the request answers as a replay, saying it waited. "/busy" holds the worker
// until `busy_done` is ready.
struct KeyInFlight {
  KeyWaiters& waiters;
  std::int64_t user_id;
  std::string key;
  std::shared_future<void> busy_done;
  std::atomic<bool> in_flight{true};

  http::Response operator()(const http::Request& request) {
    if (request.path == "/busy") {
      busy_done.wait_for(10s);
      return rr::test::plain_text("busy");
    }
    rr::api::BoundedWait wait(10, 10s, request.wait_deadline, rr::api::held_wait_place(request));
    if (!in_flight) {
      auto replay = rr::test::plain_text("replayed");
      rr::api::mark_wait_applied(replay, wait);
      return replay;
    }
    try {
      if (auto later = rr::api::wait_for_release(&waiters, wait, user_id, key)) return std::move(*later);
      return rr::api::error_response(rr::api::key_in_flight());
    } catch (const rr::api::ApiError& e) {
      return rr::api::error_response(e);
    }
  }
};

http::ServerOptions one_worker_and_one_control_thread() {
  http::ServerOptions options;
  options.worker_threads = 1;
  options.control_threads = 1;
  options.max_fibers = 0;
  options.max_queued_requests = 0;
  return options;
}

http::Request request_at(std::string path) {
  http::Request request;
  request.method = "POST";
  request.path = std::move(path);
  return request;
}

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
  // "At once": each 409 comes while the first request is still at the provider, whose round is far
  // longer than a refusal takes even on loaded cores; a request that waited would come after it.
  start_api();
  stripe.configure("{\"latency_ms\":4000}");
  auto still_running = [](std::future<Timed>& request) { return request.wait_for(0s) == std::future_status::timeout; };
  auto key = new_key();
  auto first = post_ride_async(*api, token, key);
  until_locked(key);
  auto plain = post_ride(*api, token, key);
  BOOST_TEST(plain.response.status == 409);
  BOOST_TEST(still_running(first), "plain: the 409 came after the first request ended");
  BOOST_TEST(plain.response.header("Retry-After") == "1");
  auto unparsable = post_ride(*api, token, key, "soon");
  BOOST_TEST(unparsable.response.status == 409);
  BOOST_TEST(still_running(first), "unparsable: the 409 came after the first request ended");
  auto zero = post_ride(*api, token, key, "0");
  BOOST_TEST(zero.response.status == 409);
  BOOST_TEST(still_running(first), "zero: the 409 came after the first request ended");
  BOOST_TEST(first.get().response.status == 201);

  start_api({{"IDEMPOTENCY_MAX_WAIT", "0"}});
  auto second_key = new_key();
  auto second = post_ride_async(*api, token, second_key);
  until_locked(second_key);
  auto off = post_ride(*api, token, second_key, "5");
  BOOST_TEST(off.response.status == 409);
  BOOST_TEST(still_running(second), "off: the 409 came after the first request ended");
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
  auto listed = small.get("/rides", token);
  BOOST_TEST(listed.status == 200);
  // ... answered while every waiter was still parked (the first requests need 4 s): the list did
  // not queue behind them, whatever the cores' speed.
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

BOOST_AUTO_TEST_CASE(a_request_woken_while_the_key_is_in_flight_keeps_its_place_until_it_is_answered) {
  constexpr std::size_t kPlaces = 2;
  auto key = new_key();
  auto user_id = lock_key_of_alice(key);
  rr::db::ConnectionPool pool{db.url(), db.session_options(), 2, 5s};
  KeyWaiters waiters(pool, places_per_user(kPlaces));
  std::promise<void> busy_done;
  KeyInFlight handler{waiters, user_id, key, busy_done.get_future().share()};
  http::RequestScheduler scheduler(
      one_worker_and_one_control_thread(), [&](const http::Request& request) { return handler(request); }, nullptr);
  boost::asio::io_context no_fibers;
  auto run_on = [&](http::Lane lane, const std::string& path, AwaitedAnswer& answer) {
    scheduler.run(scheduler.place(lane), request_at(path), no_fibers.get_executor(), answer.callback());
  };

  // The user's places, each taken by a request that waits.
  AwaitedAnswer first, second, third, busy;
  run_on(http::Lane::workers, "/first", first);
  run_on(http::Lane::workers, "/second", second);
  BOOST_REQUIRE(eventually([&] { return waiters.waiting() == kPlaces; }));
  // Both woken while the key is still in flight (as when its lock looked abandoned, or its creation
  // rolled back and was retried); their re-runs queue behind a busy worker.
  run_on(http::Lane::workers, "/busy", busy);
  waiters.key_released(user_id, key);
  BOOST_TEST(waiters.waiting() == 0u);

  // Meanwhile a third request of the same user: both places are still held, by requests not yet
  // answered, so it is refused at once.
  run_on(http::Lane::control, "/third", third);
  BOOST_REQUIRE(third.arrives_within(5s));
  auto refused = third.get();
  BOOST_TEST(refused.status == 429, refused.body);
  BOOST_TEST(refused.header("Retry-After").value_or("") == "1");

  // The two run again, find the key still in flight, and park again, each in its own place.
  busy_done.set_value();
  BOOST_TEST(eventually([&] { return waiters.waiting() == kPlaces; }));
  BOOST_TEST(!first.arrives_within(100ms));
  BOOST_TEST(!second.arrives_within(0ms));

  // The key let go: both answer, saying they waited, and their places are given back.
  handler.in_flight = false;
  waiters.key_released(user_id, key);
  for (auto* waited : {&first, &second}) {
    BOOST_REQUIRE(waited->arrives_within(5s));
    auto answer = waited->get();
    BOOST_TEST(answer.status == 200, answer.body);
    BOOST_TEST(answer.body == "replayed");
    BOOST_TEST(answer.header("Preference-Applied").value_or("") == "wait=10");
  }
  BOOST_TEST(waiters.waiting() == 0u);
  BOOST_TEST(scheduler.parked() == 0u);
  auto again_first = waiters.reserve(user_id);
  auto again_second = waiters.reserve(user_id);
  BOOST_TEST(holds_a_place(again_first));
  BOOST_TEST(holds_a_place(again_second));
  BOOST_TEST(!holds_a_place(waiters.reserve(user_id)));  // the bound itself is unchanged
  scheduler.stop();
}

BOOST_AUTO_TEST_CASE(a_woken_waiter_parks_again_in_its_own_place_which_is_given_back_when_dropped) {
  auto key = new_key();
  auto user_id = lock_key_of_alice(key);
  rr::db::ConnectionPool pool{db.url(), db.session_options(), 2, 5s};
  KeyWaiters waiters(pool, places_per_user(1));
  std::atomic<int> resumed{0};
  auto deadline = Clock::now() + 10s;

  auto reserved = waiters.reserve(user_id);
  BOOST_REQUIRE(holds_a_place(reserved));
  auto place = std::get<std::shared_ptr<KeyWaiters::Place>>(std::move(reserved));
  waiters.add(*place, key, deadline, [&] { ++resumed; });
  waiters.key_released(user_id, key);
  BOOST_TEST(resumed.load() == 1);
  BOOST_TEST(waiters.waiting() == 0u);
  // Woken, it still holds the user's one place: nobody else may wait in it meanwhile ...
  auto other = waiters.reserve(user_id);
  BOOST_REQUIRE(!holds_a_place(other));
  BOOST_TEST((std::get<KeyWaiters::Refusal>(other) == KeyWaiters::Refusal::user_at_share));
  // ... and it parks again in it, not refused although the user is at the bound.
  waiters.add(*place, key, deadline, [&] { ++resumed; });
  BOOST_TEST(waiters.waiting() == 1u);
  waiters.key_released(user_id, key);
  BOOST_TEST(resumed.load() == 2);

  // Answered (its holder drops it): the place is free for the user's next wait.
  place.reset();
  BOOST_TEST(holds_a_place(waiters.reserve(user_id)));
}

BOOST_AUTO_TEST_SUITE_END()
