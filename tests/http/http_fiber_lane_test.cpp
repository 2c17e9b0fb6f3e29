// Lane::fibers: a request the triage sends there runs as a fiber on its connection's
// I/O thread, suspends where it waits without holding the thread or a worker, hands blocking work
// to the workers, and beyond ServerOptions::max_fibers runs on the workers as before.
#define BOOST_TEST_MODULE http_fiber_lane
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/fiber/fiber.hpp"
#include "common/http/client.hpp"
#include "common/http/server.hpp"
#include "support/plain_text.hpp"

using rr::test::plain_text;
using namespace std::chrono_literals;
using rr::http::Request;
using rr::http::Response;

namespace {

rr::http::ClientResponse get(const rr::http::Server& server, const std::string& path) {
  rr::http::ClientRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(server.port()) + path;
  request.timeout = 10000ms;
  return rr::http::send(request);
}

// One I/O thread and one worker: two requests can only overlap if neither holds either thread.
rr::http::ServerOptions one_of_each(std::size_t max_fibers) {
  rr::http::ServerOptions options;
  options.io_threads = 1;
  options.worker_threads = 1;
  options.max_fibers = max_fibers;
  return options;
}

rr::http::Triage everything_to(rr::http::Lane lane) {
  return [lane](Request&) { return rr::http::Dispatch{std::nullopt, lane}; };
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_suspended_fiber_holds_neither_the_io_thread_nor_the_worker) {
  std::mutex mutex;
  std::vector<std::string> events;
  auto note = [&](std::string event) {
    std::lock_guard lock(mutex);
    events.push_back(std::move(event));
  };
  std::promise<void> second_arrived;
  auto second_seen = second_arrived.get_future().share();
  rr::http::Server server(
      one_of_each(16),
      [&](const Request& request) {
        BOOST_TEST(rr::fiber::active());
        if (request.path == "/first") {
          note("first waits");
          // Suspends until the second request has run to its end on the same threads.
          while (second_seen.wait_for(0s) != std::future_status::ready) rr::fiber::sleep_for(5ms);
          note("first answers");
          return plain_text("first");
        }
        note("second runs");
        second_arrived.set_value();
        return plain_text("second");
      },
      everything_to(rr::http::Lane::fibers));
  server.start();
  auto first = std::async(std::launch::async, [&] { return get(server, "/first"); });
  while (true) {
    std::lock_guard lock(mutex);
    if (!events.empty()) break;
  }
  auto second = get(server, "/second");
  BOOST_TEST(second.body == "second");
  BOOST_TEST(first.get().body == "first");
  BOOST_TEST(events == (std::vector<std::string>{"first waits", "second runs", "first answers"}),
             boost::test_tools::per_element());
  server.stop();
}

BOOST_AUTO_TEST_CASE(blocking_work_of_a_fiber_runs_on_a_worker_and_its_failure_is_a_500) {
  std::thread::id handler_thread, blocking_thread;
  rr::http::Server server(
      one_of_each(16),
      [&](const Request& request) {
        handler_thread = std::this_thread::get_id();
        blocking_thread = rr::fiber::blocking([] { return std::this_thread::get_id(); });
        if (request.path == "/fail") rr::fiber::blocking([]() -> int { throw std::runtime_error("worker failed"); });
        return plain_text("ok");
      },
      everything_to(rr::http::Lane::fibers));
  server.start();
  BOOST_TEST(get(server, "/").body == "ok");
  BOOST_TEST((handler_thread != blocking_thread));
  auto failed = get(server, "/fail");
  BOOST_TEST(failed.status == 500);  // the server's error boundary, as for a worker's handler
  BOOST_TEST(get(server, "/").status == 200);
  server.stop();
}

BOOST_AUTO_TEST_CASE(beyond_max_fibers_and_with_none_requests_run_on_the_workers) {
  std::atomic<int> on_fibers{0}, on_workers{0};
  auto count_where = [&](const Request&) {
    (rr::fiber::active() ? on_fibers : on_workers)++;
    return plain_text("ok");
  };
  {
    rr::http::Server server(one_of_each(0), count_where, everything_to(rr::http::Lane::fibers));
    server.start();
    BOOST_TEST(get(server, "/").status == 200);
    server.stop();
  }
  BOOST_TEST(on_fibers.load() == 0);
  BOOST_TEST(on_workers.load() == 1);

  // One fiber at most: while it is suspended, a second request goes to the worker.
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<bool> first_running{false};
  rr::http::Server server(
      one_of_each(1),
      [&](const Request& request) {
        if (request.path == "/hold") {
          BOOST_TEST(rr::fiber::active());
          first_running = true;
          while (released.wait_for(0s) != std::future_status::ready) rr::fiber::sleep_for(5ms);
          return plain_text("held");
        }
        return plain_text(rr::fiber::active() ? "fiber" : "worker");
      },
      everything_to(rr::http::Lane::fibers));
  server.start();
  auto held = std::async(std::launch::async, [&] { return get(server, "/hold"); });
  while (!first_running) std::this_thread::sleep_for(1ms);
  BOOST_TEST(get(server, "/other").body == "worker");
  release.set_value();
  BOOST_TEST(held.get().body == "held");
  BOOST_TEST(get(server, "/other").body == "fiber");  // the place is free again
  server.stop();
}

BOOST_AUTO_TEST_CASE(stopping_with_a_suspended_fiber_ends_cleanly) {
  // Set by a local of the handler when the fiber's stack is unwound, whichever way it ends.
  struct SetOnExit {
    std::atomic<bool>& flag;
    ~SetOnExit() { flag = true; }
  };
  std::atomic<bool> running{false}, resumed{false}, unwound{false};
  {
    rr::http::Server server(
        one_of_each(16),
        [&](const Request&) {
          SetOnExit on_exit{unwound};
          running = true;
          rr::fiber::sleep_for(60s);  // never ends by itself
          resumed = true;
          return plain_text("late");
        },
        everything_to(rr::http::Lane::fibers));
    server.start();
    std::thread client([&] {
      try {
        get(server, "/");
      } catch (const rr::http::TransportError&) {
        // the connection closes with the server
      }
    });
    while (!running) std::this_thread::sleep_for(1ms);
    server.stop();
    client.join();
  }
  // The suspended fiber is unwound with its I/O thread's io_context, when the server is destroyed:
  // its locals are destroyed (under ASan nothing of it, stack, session or request, leaks), and
  // the handler never runs on past its wait.
  BOOST_TEST(unwound.load(), "the suspended fiber's stack was never unwound");
  BOOST_TEST(!resumed.load(), "the handler ran on past its wait");
}
