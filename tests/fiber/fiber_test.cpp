// Request fibers (common/fiber/fiber.hpp): suspension leaves the I/O thread to other fibers,
// blocking work runs on the workers, wake-ups cross threads, and nothing of it leaks off a fiber.
#define BOOST_TEST_MODULE fiber
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/fiber/fiber.hpp"
#include "support/fibers.hpp"

using namespace std::chrono_literals;
using rr::testing::run_fibers;

BOOST_AUTO_TEST_CASE(off_a_fiber_nothing_is_a_fiber) {
  BOOST_TEST(!rr::fiber::active());
  BOOST_TEST(rr::fiber::blocking([] { return 7; }) == 7);
  BOOST_TEST(rr::fiber::Waker::for_this_fiber() == nullptr);
}

BOOST_AUTO_TEST_CASE(a_sleeping_fiber_lets_the_others_run_on_its_thread) {
  std::vector<std::string> order;
  run_fibers({[&] {
                BOOST_TEST(rr::fiber::active());
                order.push_back("a starts");
                rr::fiber::sleep_for(50ms);
                BOOST_TEST(rr::fiber::active());  // restored after the suspension
                order.push_back("a ends");
              },
              [&] {
                order.push_back("b starts");
                order.push_back("b ends");
              }});
  BOOST_TEST(order == (std::vector<std::string>{"a starts", "b starts", "b ends", "a ends"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(blocking_work_runs_on_a_worker_and_brings_back_its_result_and_errors) {
  auto io_thread = std::this_thread::get_id();
  std::thread::id ran_on;
  int result = 0;
  bool threw = false;
  run_fibers({[&] {
    result = rr::fiber::blocking([&] {
      ran_on = std::this_thread::get_id();
      BOOST_TEST(!rr::fiber::active());  // a worker is not a fiber: nested leaves block in place
      return 42;
    });
    BOOST_TEST(std::this_thread::get_id() == io_thread);  // resumed on its own thread
    try {
      rr::fiber::blocking([]() -> int { throw std::runtime_error("from the worker"); });
    } catch (const std::runtime_error& e) {
      threw = std::string(e.what()) == "from the worker";
    }
  }});
  BOOST_TEST(result == 42);
  BOOST_TEST((ran_on != io_thread));
  BOOST_TEST(threw);
}

BOOST_AUTO_TEST_CASE(a_waker_is_woken_from_another_thread_or_times_out) {
  bool woken = false, timed_out_as_such = false, early_wake_seen = false;
  run_fibers({[&] {
    auto waker = rr::fiber::Waker::for_this_fiber();
    std::thread other([waker] {
      std::this_thread::sleep_for(20ms);
      waker->wake();
    });
    woken = waker->wait_until(std::chrono::steady_clock::now() + 10s);
    other.join();

    auto idle = rr::fiber::Waker::for_this_fiber();
    timed_out_as_such = !idle->wait_until(std::chrono::steady_clock::now() + 20ms);

    auto early = rr::fiber::Waker::for_this_fiber();
    early->wake();  // before the wait: the wait returns at once
    early_wake_seen = early->wait_until(std::chrono::steady_clock::now() + 10s);
  }});
  BOOST_TEST(woken);
  BOOST_TEST(timed_out_as_such);
  BOOST_TEST(early_wake_seen);
}

BOOST_AUTO_TEST_CASE(a_socket_watch_waits_for_readability_without_holding_the_thread) {
  int pair[2];
  BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  bool readable = false, timed_out = false;
  std::vector<std::string> order;
  run_fibers({[&] {
                rr::fiber::SocketWatch watch(pair[0]);
                timed_out = !watch.wait_readable(std::chrono::steady_clock::now() + 20ms);
                order.push_back("waiting");
                readable = watch.wait_readable(std::chrono::steady_clock::now() + 10s);
                order.push_back("read");
              },
              [&] {
                rr::fiber::sleep_for(60ms);
                order.push_back("writing");
                BOOST_TEST(::write(pair[1], "x", 1) == 1);
              }});
  BOOST_TEST(timed_out);
  BOOST_TEST(readable);
  BOOST_TEST(order == (std::vector<std::string>{"waiting", "writing", "read"}), boost::test_tools::per_element());
  char byte;
  BOOST_TEST(::read(pair[0], &byte, 1) == 1);  // the watch left the socket open and unread
  ::close(pair[0]);
  ::close(pair[1]);
}

BOOST_AUTO_TEST_CASE(many_fibers_reuse_pooled_stacks) {
  std::atomic<int> ended{0};
  std::vector<std::function<void()>> bodies;
  for (int i = 0; i < 500; ++i) {
    bodies.emplace_back([&] {
      rr::fiber::sleep_for(1ms);
      ++ended;
    });
  }
  run_fibers(std::move(bodies));
  run_fibers({[&] { ++ended; }});
  BOOST_TEST(ended.load() == 501);
}

#ifndef NDEBUG
// Debug and sanitized builds check every suspension: a fiber that waits inside a catch clause ends
// the process with one line, instead of corrupting, some of the time, another fiber's exception.
// Run in a forked child, the death being the expected outcome.
BOOST_AUTO_TEST_CASE(a_fiber_suspending_inside_a_catch_clause_ends_the_process_in_debug_builds) {
  int output[2];
  BOOST_REQUIRE(::pipe(output) == 0);
  pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGABRT, SIG_DFL);  // Boost.Test's handler would turn the abort into an exit
    ::dup2(output[1], STDERR_FILENO);
    ::close(output[0]);
    run_fibers({[] {
      try {
        throw std::runtime_error("being handled");
      } catch (const std::runtime_error&) {
        rr::fiber::sleep_for(1ms);  // the broken rule
      }
    }});
    ::_exit(0);
  }
  ::close(output[1]);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = ::read(output[0], buffer, sizeof buffer)) > 0;) said.append(buffer, static_cast<std::size_t>(n));
  ::close(output[0]);
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_TEST((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT), "child status " << status << ", said: " << said);
  BOOST_TEST(said.find("a fiber suspended inside a catch clause") != std::string::npos, said);
}

BOOST_AUTO_TEST_CASE(a_fiber_suspending_after_its_catch_clause_is_fine) {
  bool resumed = false;
  run_fibers({[&] {
    bool failed = false;
    try {
      throw std::runtime_error("being handled");
    } catch (const std::runtime_error&) {
      failed = true;  // take what the handler needs, leave the clause, then wait
    }
    if (failed) rr::fiber::sleep_for(1ms);
    resumed = true;
  }});
  BOOST_TEST(resumed);
}
#endif
