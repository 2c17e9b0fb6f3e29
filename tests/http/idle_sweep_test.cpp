// IdleSweep on a real io_context: waiters are told only once past their deadline, a removed one
// never, and the sweep's timer stops with the last waiter (run() returns: nothing left pending).
#include "common/http/idle_sweep.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <functional>
#include <vector>

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct RecordingWaiter : rr::http::IdleWaiter {
  std::vector<Clock::time_point> told;
  std::function<void()> on_told;
  void idle_deadline_passed() override {
    told.push_back(Clock::now());
    if (on_told) on_told();
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_waiter_is_told_once_its_deadline_has_passed_and_not_before) {
  boost::asio::io_context context;
  rr::http::IdleSweep sweep(context, 20ms);
  RecordingWaiter soon, later;
  auto started = Clock::now();
  sweep.add(soon, started + 60ms);
  sweep.add(later, started + 200ms);
  BOOST_TEST(sweep.waiting() == 2u);
  context.run();  // returns once both were told: the timer stops with the last waiter
  BOOST_REQUIRE(soon.told.size() == 1u);
  BOOST_REQUIRE(later.told.size() == 1u);
  BOOST_TEST((soon.told[0] >= started + 60ms));
  BOOST_TEST((later.told[0] >= started + 200ms));
  BOOST_TEST((soon.told[0] < later.told[0]));
  BOOST_TEST(sweep.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(a_removed_waiter_is_never_told_and_the_others_keep_their_places) {
  boost::asio::io_context context;
  rr::http::IdleSweep sweep(context, 10ms);
  RecordingWaiter first, second, third;
  auto deadline = Clock::now() + 50ms;
  sweep.add(first, deadline);
  sweep.add(second, deadline);
  sweep.add(third, deadline);
  sweep.remove(first);  // the last one takes its slot
  sweep.remove(first);  // removing twice changes nothing
  sweep.remove(third);  // which is then at the end
  BOOST_TEST(sweep.waiting() == 1u);
  context.run();
  BOOST_TEST(first.told.empty());
  BOOST_TEST(third.told.empty());
  BOOST_TEST(second.told.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_wait_begun_again_moves_its_deadline_instead_of_adding_a_second_entry) {
  boost::asio::io_context context;
  rr::http::IdleSweep sweep(context, 10ms);
  RecordingWaiter waiter;
  auto started = Clock::now();
  sweep.add(waiter, started + 20ms);
  sweep.add(waiter, started + 150ms);
  BOOST_TEST(sweep.waiting() == 1u);
  context.run();
  BOOST_REQUIRE(waiter.told.size() == 1u);
  BOOST_TEST((waiter.told[0] >= started + 150ms));
}

BOOST_AUTO_TEST_CASE(a_waiter_told_may_begin_a_new_wait_and_the_sweep_runs_on_for_it) {
  boost::asio::io_context context;
  rr::http::IdleSweep sweep(context, 10ms);
  RecordingWaiter waiter;
  waiter.on_told = [&] {
    if (waiter.told.size() < 3) sweep.add(waiter, Clock::now() + 20ms);
  };
  sweep.add(waiter, Clock::now() + 20ms);
  context.run();
  BOOST_TEST(waiter.told.size() == 3u);
  BOOST_TEST(sweep.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(the_sweep_starts_again_for_a_waiter_added_after_it_stopped) {
  boost::asio::io_context context;
  rr::http::IdleSweep sweep(context, 10ms);
  RecordingWaiter first, second;
  sweep.add(first, Clock::now());
  context.run();
  BOOST_TEST(first.told.size() == 1u);
  context.restart();
  sweep.add(second, Clock::now() + 30ms);
  context.run();
  BOOST_TEST(second.told.size() == 1u);
}

BOOST_AUTO_TEST_CASE(the_period_is_an_eighth_of_the_shorter_timeout_within_bounds) {
  BOOST_TEST(rr::http::idle_sweep_period(30000ms, 60000ms).count() == 1000);  // at most a second
  BOOST_TEST(rr::http::idle_sweep_period(800ms, 60000ms).count() == 100);
  BOOST_TEST(rr::http::idle_sweep_period(60000ms, 400ms).count() == 50);
  BOOST_TEST(rr::http::idle_sweep_period(20ms, 20ms).count() == 10);  // at least 10 ms
}
