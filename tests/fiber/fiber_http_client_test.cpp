// http::Client on request fibers (common/fiber/fiber.hpp): a provider call suspends the fiber and
// its I/O thread serves other fibers meanwhile; deadlines, kept connections and the retry of a
// stale one work as they do for a blocking caller. Orders of events, never timings, are asserted.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/fiber/fiber.hpp"
#include "common/http/client.hpp"
#include "common/http/server.hpp"
#include "support/counting_server.hpp"
#include "support/fibers.hpp"

using namespace std::chrono_literals;
using rr::test::CountingServer;
using rr::testing::run_fibers;

namespace {

// Lines the test server's handlers (on its worker threads) write, and a way to wait for one.
class ServerEvents {
 public:
  void add(const std::string& event) {
    std::lock_guard lock(mutex_);
    events_.push_back(event);
    changed_.notify_all();
  }
  // False when `event` did not come within `limit` (a broken client: it never sent it).
  bool wait_for(const std::string& event, std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit,
                             [&] { return std::find(events_.begin(), events_.end(), event) != events_.end(); });
  }
  std::vector<std::string> all() {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> events_;
};

rr::http::ClientRequest request_to(std::uint16_t port, const std::string& path, const std::string& method = "GET") {
  return rr::test::request_to("http://127.0.0.1:" + std::to_string(port) + path, method, 20000ms);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fiber_http_client)

BOOST_AUTO_TEST_CASE(a_request_from_a_fiber_gets_the_status_headers_and_body) {
  rr::http::Server server({}, [](const rr::http::Request& request) {
    return rr::http::Response(201, "text/plain", {{"X-Seen-Method", request.method}}, "got " + request.body);
  });
  server.start();
  rr::http::Client client;
  rr::http::ClientResponse response;
  bool still_on_the_fiber = false;
  run_fibers({[&] {
    response = client.send(request_to(server.port(), "/things", "POST"));
    still_on_the_fiber = rr::fiber::active();
  }});
  BOOST_TEST(response.status == 201);
  BOOST_TEST(response.header("x-seen-method") == "POST");
  BOOST_TEST(response.header("Content-Type") == "text/plain");
  BOOST_TEST(response.body == "got a=1");
  BOOST_TEST(still_on_the_fiber);
}

// The server answers the first request only once the second fiber has had its answer and said
// so (a request to /done): both fibers share one I/O thread, so the test ends only if the first
// fiber's wait left the thread to the second.
BOOST_AUTO_TEST_CASE(a_fiber_waiting_for_its_answer_leaves_the_thread_to_another_fibers_request) {
  ServerEvents server_events;
  rr::http::Server server({}, [&](const rr::http::Request& request) {
    server_events.add("arrived " + request.path);
    if (request.path == "/first" && !server_events.wait_for("arrived /done", 10000ms)) {
      return rr::http::Response(500, "text/plain", {}, "the second fiber never got its answer");
    }
    return rr::http::Response(200, "text/plain", {}, "answer to " + request.path);
  });
  server.start();
  rr::http::Client client;
  std::vector<std::string> events;  // both fibers run on one thread: no lock
  run_fibers({[&] {
                events.push_back("1 sends");
                auto response = client.send(request_to(server.port(), "/first"));
                events.push_back("1 got " + std::to_string(response.status) + " " + response.body);
              },
              [&] {
                events.push_back("2 sends");
                auto response = client.send(request_to(server.port(), "/second"));
                events.push_back("2 got " + std::to_string(response.status) + " " + response.body);
                client.send(request_to(server.port(), "/done"));
              }});
  BOOST_TEST(events == (std::vector<std::string>{"1 sends", "2 sends", "2 got 200 answer to /second",
                                                 "1 got 200 answer to /first"}),
             boost::test_tools::per_element());
  // The two first requests come on two connections, to two server workers: which the server
  // sees first is a race. "/done" is sent only after the second's answer, so it follows "/second".
  const auto arrivals = server_events.all();
  const auto position_of = [&](const std::string& event) {
    return std::find(arrivals.begin(), arrivals.end(), event) - arrivals.begin();
  };
  BOOST_TEST(arrivals.size() == 3u);
  BOOST_TEST(position_of("arrived /first") < 3);
  BOOST_TEST(position_of("arrived /second") < position_of("arrived /done"));
  BOOST_TEST(position_of("arrived /done") < 3);
  // Kept for that thread's fibers only, until its io_context went away with run_fibers.
  BOOST_TEST(client.idle_connections() == 0u);
}

BOOST_AUTO_TEST_CASE(a_timeout_on_a_fiber_is_a_timed_out_transport_error_while_the_thread_serves_others) {
  ServerEvents server_events;
  rr::http::Server server({}, [&](const rr::http::Request& request) {
    server_events.add("arrived " + request.path);
    // Never answers in time: held until the test lets go.
    if (request.path == "/slow") server_events.wait_for("let go", 10000ms);
    return rr::http::Response(200, "text/plain", {}, "answer to " + request.path);
  });
  server.start();
  rr::http::Client client;
  std::vector<std::string> events;
  bool timed_out = false;
  std::string message;
  std::string after_the_timeout;
  run_fibers({[&] {
                events.push_back("1 sends");
                auto slow = request_to(server.port(), "/slow");
                slow.timeout = 3000ms;
                try {
                  client.send(slow);
                  events.push_back("1 got an answer");
                } catch (const rr::http::TransportError& e) {
                  events.push_back("1 timed out");
                  timed_out = e.timed_out();
                  message = e.what();
                }
                // The cancelled exchange has unwound: the client serves this fiber's next request.
                after_the_timeout = client.send(request_to(server.port(), "/quick")).body;
              },
              [&] {
                events.push_back("2 sends");
                auto response = client.send(request_to(server.port(), "/quick"));
                events.push_back("2 got " + response.body);
              }});
  server_events.add("let go");
  BOOST_TEST(events == (std::vector<std::string>{"1 sends", "2 sends", "2 got answer to /quick", "1 timed out"}),
             boost::test_tools::per_element());
  BOOST_TEST(timed_out);
  // "after 3000 ms", or a millisecond less: the time left when the exchange began.
  BOOST_TEST(message.starts_with("GET http://127.0.0.1:" + std::to_string(server.port()) + "/slow: timed out after "));
  BOOST_TEST(message.ends_with(" ms during read"));
  BOOST_TEST(after_the_timeout == "answer to /quick");
}

// The deadline on a kept connection, whose round trip runs on the fiber itself: the same timed-out
// error, the connection closed and not kept, the next request on a fresh one.
BOOST_AUTO_TEST_CASE(a_timeout_on_a_kept_connection_is_a_timed_out_transport_error_and_drops_it) {
  ServerEvents server_events;
  rr::http::Server server({}, [&](const rr::http::Request& request) {
    if (request.path == "/slow") server_events.wait_for("let go", 10000ms);
    return rr::http::Response(200, "text/plain", {}, "answer to " + request.path);
  });
  server.start();
  rr::http::Client client;
  std::string first, message, after;
  bool timed_out = false;
  std::size_t kept_after_timeout = 99;
  run_fibers({[&] {
    first = client.send(request_to(server.port(), "/quick")).body;
    auto slow = request_to(server.port(), "/slow");
    slow.timeout = 1000ms;
    try {
      client.send(slow);
    } catch (const rr::http::TransportError& e) {
      timed_out = e.timed_out();
      message = e.what();
    }
    kept_after_timeout = client.idle_connections();
    after = client.send(request_to(server.port(), "/quick")).body;
  }});
  server_events.add("let go");
  BOOST_TEST(first == "answer to /quick");
  BOOST_TEST(timed_out);
  BOOST_TEST(message.ends_with(" ms during read"));
  BOOST_TEST(kept_after_timeout == 0u);
  BOOST_TEST(after == "answer to /quick");
  server.stop();
}

BOOST_AUTO_TEST_CASE(a_connection_kept_for_fibers_is_reused_by_the_next_request_on_the_same_thread) {
  CountingServer server(1000);
  rr::http::Client client;
  std::size_t kept_between = 0;
  std::shared_ptr<rr::fiber::Waker> second_fiber;
  run_fibers({[&] {
                second_fiber = rr::fiber::Waker::for_this_fiber();
                // Waits for the first fiber's request to be over, so the two never overlap.
                BOOST_REQUIRE(second_fiber->wait_until(std::chrono::steady_clock::now() + 20s));
                BOOST_TEST(client.send(request_to(server.port(), "/second")).body == "ok");
                BOOST_TEST(client.send(request_to(server.port(), "/third")).body == "ok");
                second_fiber.reset();  // a waker must not outlive its I/O thread's io_context
              },
              [&] {
                BOOST_TEST(client.send(request_to(server.port(), "/first")).body == "ok");
                kept_between = client.idle_connections();
                second_fiber->wake();
              }});
  BOOST_TEST(kept_between == 1u);
  BOOST_TEST(server.requests() == 3);
  BOOST_TEST(server.accepted() == 1);
  // Dropped with the io_context it lived on; a blocking caller never had it anyway.
  BOOST_TEST(client.idle_connections() == 0u);
  BOOST_TEST(client.send(request_to(server.port(), "/blocking")).body == "ok");
  BOOST_TEST(server.accepted() == 2);
}

BOOST_AUTO_TEST_CASE(connections_kept_for_fibers_and_for_blocking_callers_are_kept_apart) {
  CountingServer server(1000);
  rr::http::Client client;
  BOOST_TEST(client.send(request_to(server.port(), "/blocking")).body == "ok");
  BOOST_TEST(client.idle_connections() == 1u);
  run_fibers({[&] {
    // The blocking caller's connection lives on an io_context of its own, not this thread's.
    BOOST_TEST(client.send(request_to(server.port(), "/fiber")).body == "ok");
    BOOST_TEST(client.idle_connections() == 2u);
  }});
  BOOST_TEST(server.accepted() == 2);
  BOOST_TEST(client.idle_connections() == 1u);
  BOOST_TEST(client.send(request_to(server.port(), "/blocking-again")).body == "ok");
  BOOST_TEST(server.accepted() == 2);  // the blocking caller's kept one, still there
}

BOOST_AUTO_TEST_CASE(a_kept_connection_the_server_closed_is_retried_once_only_when_sending_twice_is_harmless) {
  CountingServer server(1);  // closes after every answer, without saying so
  rr::http::Client client;
  bool plain_post_failed = false;
  bool plain_post_timed_out = true;
  run_fibers({[&] {
    BOOST_TEST(client.send(request_to(server.port(), "/first")).body == "ok");
    rr::fiber::sleep_for(50ms);  // let the close arrive
    auto with_key = request_to(server.port(), "/charges", "POST");
    with_key.headers = {{"Idempotency-Key", "key-0000000000000000001"}};
    BOOST_TEST(client.send(with_key).body == "ok");
    BOOST_TEST(server.accepted() == 2);
    BOOST_TEST(server.requests() == 2);

    rr::fiber::sleep_for(50ms);
    try {
      client.send(request_to(server.port(), "/charges", "POST"));
    } catch (const rr::http::TransportError& e) {
      plain_post_failed = true;
      plain_post_timed_out = e.timed_out();
    }
    BOOST_TEST(server.requests() == 2);  // not sent again on a fresh connection
    // The dead connection is gone: the next request opens a fresh one.
    BOOST_TEST(client.send(request_to(server.port(), "/charges", "POST")).body == "ok");
  }});
  BOOST_TEST(plain_post_failed);
  BOOST_TEST(!plain_post_timed_out);
  BOOST_TEST(server.requests() == 3);
  BOOST_TEST(server.accepted() == 3);
}

BOOST_AUTO_TEST_SUITE_END()
