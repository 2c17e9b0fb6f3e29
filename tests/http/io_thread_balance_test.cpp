// I/O threads in use: one thread serves light traffic; traffic that keeps it busy takes the next
// thread in, also while other work takes every core, and connections move there between requests,
// with what they sent ahead; a load that drops gives the thread back. The decisions
// (IoThreadBalance), what they read (each thread's schedstat), and the server that follows them,
// over real loopback connections.
#define BOOST_TEST_MODULE io_thread_balance
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "common/http/io_thread_balance.hpp"
#include "common/http/server.hpp"
#include "common/http/thread_demand.hpp"
#include "support/raw_connection.hpp"
#include "support/spinning_server.hpp"

using namespace std::chrono_literals;
using rr::http::IoThreadBalance;
using rr::test::SpinningServer;

namespace {

std::vector<std::size_t> counts(const IoThreadBalance& balance) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < balance.threads(); ++i) out.push_back(balance.connections(i));
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(new_connections_stay_on_the_first_thread_until_it_is_busy) {
  IoThreadBalance balance(2);
  for (int i = 0; i < 4; ++i) {
    BOOST_TEST(balance.placement() == 0u);
    balance.placed(0);
  }
  BOOST_TEST(balance.active() == 1u);
  BOOST_TEST(!balance.target_for(0).has_value());
  balance.observe({0.65, 0.0});  // busy, but below the line
  BOOST_TEST(balance.active() == 1u);
  balance.observe({0.9, 0.0});
  BOOST_TEST(balance.active() == 2u);
  BOOST_TEST(balance.placement() == 1u);  // the emptiest thread in use
}

BOOST_AUTO_TEST_CASE(connections_even_out_one_move_at_a_time) {
  IoThreadBalance balance(2);
  for (int i = 0; i < 4; ++i) balance.placed(balance.placement());
  balance.observe({0.95, 0.0});
  auto target = balance.target_for(0);
  BOOST_REQUIRE(target.has_value());
  BOOST_TEST(*target == 1u);
  balance.moved(0, 1);
  BOOST_TEST(counts(balance) == (std::vector<std::size_t>{3, 1}), boost::test_tools::per_element());
  BOOST_TEST(balance.target_for(0).value_or(99) == 1u);
  balance.moved(0, 1);
  // Two apart no longer: a move would only swap the gap round.
  BOOST_TEST(!balance.target_for(0).has_value());
  BOOST_TEST(!balance.target_for(1).has_value());
  balance.closed(0);
  balance.closed(1);
  BOOST_TEST(counts(balance) == (std::vector<std::size_t>{1, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_thread_is_given_back_when_the_others_carry_its_load_and_its_connections_return) {
  IoThreadBalance balance(2);
  for (int i = 0; i < 2; ++i) balance.placed(balance.placement());
  balance.observe({0.9, 0.0});
  balance.moved(0, 1);
  balance.observe({0.6, 0.6});  // the replay load split: stays split
  BOOST_TEST(balance.active() == 2u);
  balance.observe({0.3, 0.25});  // one thread would carry 0.55: still too near the line
  BOOST_TEST(balance.active() == 2u);
  balance.observe({0.2, 0.2});
  BOOST_TEST(balance.active() == 1u);
  BOOST_TEST(balance.target_for(1).value_or(99) == 0u);  // a thread out of use sends its connections home
  BOOST_TEST(balance.placement() == 0u);
}

BOOST_AUTO_TEST_CASE(the_threads_in_use_never_exceed_the_threads_and_one_thread_never_moves_anything) {
  IoThreadBalance two(2);
  two.observe({0.9, 0.0});
  two.observe({0.9, 0.9});
  BOOST_TEST(two.active() == 2u);
  IoThreadBalance one(1);
  one.placed(one.placement());
  one.observe({5.0});
  BOOST_TEST(one.active() == 1u);
  BOOST_TEST(!one.target_for(0).has_value());
}

namespace {

std::string get(std::string_view path) { return "GET " + std::string(path) + " HTTP/1.1\r\nHost: test\r\n\r\n"; }

}  // namespace

BOOST_AUTO_TEST_CASE(schedstat_gives_seconds_ran_and_waited_and_nothing_for_other_text) {
  auto demand = rr::http::parse_schedstat("886045392 769010078 722\n");
  BOOST_REQUIRE(demand.has_value());
  BOOST_TEST(demand->ran_seconds == 0.886045392, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(demand->waited_seconds == 0.769010078, boost::test_tools::tolerance(1e-12));
  for (std::string_view wrong :
       {"", "\n", "1 2\n", "1 2 3 4\n", "-1 2 3\n", "1  2 3\n", "1 2 x\n", "1 2 3", "99999999999999999999 2 3\n"})
    BOOST_TEST(!rr::http::parse_schedstat(wrong).has_value(), "read: " << wrong);
  // This very thread, which has run to get here.
  auto own = rr::http::read_thread_demand(::gettid());
  BOOST_REQUIRE(own.has_value());
  BOOST_TEST(own->ran_seconds > 0.0);
  BOOST_TEST(!rr::http::read_thread_demand(0).has_value());
}

namespace {

struct Spread {
  std::size_t threads_seen = 0;
  int wrong = 0;
  int answered_after = 0;  // requests answered after the second thread answered its first
};

// Four clients that keep a spinning server's I/O thread busy with pipelined pairs of requests,
// until the second thread has answered and 200 more requests after it (20 s at most).
Spread drive_busy_clients() {
  SpinningServer spinning(1ms);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, answered{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      rr::test::RawConnection connection(spinning.server().port());
      for (int i = 0; !stop; ++i) {
        // Two requests in one write: the second is read ahead with the first, and must be
        // answered, in order, wherever the connection is by then.
        auto first = "/c" + std::to_string(c) + "-" + std::to_string(i) + "a";
        auto second = "/c" + std::to_string(c) + "-" + std::to_string(i) + "b";
        connection.send(get(first) + get(second));
        auto one = connection.read_response();
        auto two = connection.read_response();
        if (rr::test::body_of(one) != first || rr::test::body_of(two) != second) {
          ++wrong;
          return;
        }
        answered += 2;
      }
    });
  }
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (spinning.threads_seen() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  // Some more requests after the spread, on the moved connections.
  auto after = answered.load();
  while (answered < after + 200 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  stop = true;
  for (auto& client : clients) client.join();
  spinning.server().stop();
  return Spread{spinning.threads_seen(), wrong.load(), answered.load() - after};
}

}  // namespace

BOOST_AUTO_TEST_CASE(busy_connections_spread_to_the_second_thread_with_their_pipelined_requests) {
  auto spread = drive_busy_clients();
  BOOST_TEST(spread.threads_seen == 2u);
  BOOST_TEST(spread.wrong == 0);
  BOOST_TEST(spread.answered_after >= 200);
}

// Other work on every core, at the same priority: the busy I/O thread runs a third of the time or
// less and waits for a core the rest. It has more work than it gets through, so it counts as busy;
// its CPU time alone would say a third of a core and keep everything on it.
BOOST_AUTO_TEST_CASE(busy_connections_spread_while_other_threads_take_every_core) {
  std::atomic<bool> others_stop{false};
  std::vector<std::thread> others;
  for (unsigned i = 0; i < 2 * std::max(1u, std::thread::hardware_concurrency()); ++i)
    others.emplace_back([&] {
      while (!others_stop.load(std::memory_order_relaxed)) {
      }
    });
  auto spread = drive_busy_clients();
  others_stop = true;
  for (auto& other : others) other.join();
  BOOST_TEST(spread.threads_seen == 2u);
  BOOST_TEST(spread.wrong == 0);
  BOOST_TEST(spread.answered_after >= 200);
}

BOOST_AUTO_TEST_CASE(light_traffic_stays_on_one_thread) {
  SpinningServer spinning(0us);
  std::vector<std::thread> clients;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      rr::test::RawConnection connection(spinning.server().port());
      for (int i = 0; i < 100; ++i) {
        connection.send(get("/light"));
        if (rr::test::body_of(connection.read_response()) != "/light") ++wrong;
        std::this_thread::sleep_for(5ms);
      }
    });
  }
  for (auto& client : clients) client.join();
  BOOST_TEST(wrong == 0);
  BOOST_TEST(spinning.threads_seen() == 1u);
  spinning.server().stop();
}
