// A server connection's states and the moves between them (common/http/connection_state.hpp),
// each move that matters driven over a real loopback socket: a client that half-closes, pipelined
// requests, a connection moved to another I/O thread with a request begun, the graceful stop and
// the hard stop met while reading, while writing and while idle, the keep-alive idle timeout, and
// an answer written while the request's body is still arriving.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/http/connection_state.hpp"
#include "common/http/server.hpp"
#include "support/plain_text.hpp"
#include "support/polling.hpp"
#include "support/raw_connection.hpp"
#include "support/server_options.hpp"
#include "support/spinning_server.hpp"

using namespace std::chrono_literals;
using rr::http::ConnectionState;
using rr::http::Request;
using rr::http::Response;
using rr::test::body_of;
using rr::test::header_of;
using rr::test::millis;
using rr::test::plain_text;
using rr::test::RawConnection;
using rr::test::small_options;
using rr::test::SpinningServer;
using rr::test::status_of;

namespace {

std::string get(std::string_view path) { return "GET " + std::string(path) + " HTTP/1.1\r\nHost: x\r\n\r\n"; }

// Answers with the request's path; "/slow" sleeps `slow` first. Notes how many handlers ran at once.
struct PathServer {
  explicit PathServer(rr::http::ServerOptions options = small_options(), std::chrono::milliseconds slow = 300ms)
      : server(options, [this, slow](const Request& request) {
          auto now = ++running;
          auto seen = most_at_once.load();
          while (now > seen && !most_at_once.compare_exchange_weak(seen, now)) {
          }
          if (request.path == "/slow") {
            slow_started = true;
            std::this_thread::sleep_for(slow);
          }
          --running;
          return plain_text(request.path);
        }) {
    server.start();
  }

  void wait_for_slow_handler() {
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!slow_started && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    BOOST_REQUIRE(slow_started.load());
  }

  std::atomic<int> running{0};
  std::atomic<int> most_at_once{0};
  std::atomic<bool> slow_started{false};
  rr::http::Server server;
};

// An answer far larger than the sockets' buffers: its write stays in progress until the client reads.
const std::string& big_answer() {
  static const std::string big = [] {
    std::string out;
    for (int i = 0; out.size() < 16 * 1024 * 1024; ++i) out += std::to_string(i) + ",";
    return out;
  }();
  return big;
}

struct BigAnswerServer {
  BigAnswerServer()
      : big(big_answer()),  // made before any request: the answer is then written at once
        server(small_options(),
               [this](const Request& request) { return plain_text(request.path == "/big" ? big : "small"); }) {
    server.start();
  }

  const std::string& big;
  rr::http::Server server;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(http_connection_states)

// The table itself: closed is final, and a connection never reads the next request while one is
// being handled or answered (which keeps pipelined answers in order).
BOOST_AUTO_TEST_CASE(the_table_keeps_closed_final_and_reads_nothing_while_a_request_is_handled) {
  using S = ConnectionState;
  const S all[] = {S::between_requests, S::awaiting_request, S::reading_request, S::handling, S::writing_answer,
                   S::refusing,         S::lingering,        S::moving,          S::closed};
  for (S from : all) {
    BOOST_TEST(!rr::http::transition_allowed(S::closed, from), rr::http::state_name(from));
    if (from != S::closed) BOOST_TEST(rr::http::transition_allowed(from, S::closed), rr::http::state_name(from));
  }
  BOOST_TEST(!rr::http::transition_allowed(S::handling, S::reading_request));
  BOOST_TEST(!rr::http::transition_allowed(S::writing_answer, S::reading_request));
  BOOST_TEST(!rr::http::transition_allowed(S::handling, S::moving));
  BOOST_TEST(!rr::http::transition_allowed(S::writing_answer, S::moving));  // only between two requests
  BOOST_TEST(rr::http::transition_allowed(S::writing_answer, S::between_requests));
  BOOST_TEST(rr::http::transition_allowed(S::between_requests, S::moving));
  BOOST_TEST(rr::http::transition_allowed(S::moving, S::between_requests));
  BOOST_TEST(!rr::http::transition_allowed(S::lingering, S::reading_request));  // refused means the last answer
}

// Half-closed by the client: its end-of-stream comes after its requests, which are each answered;
// then the connection closes instead of waiting for a request that cannot come.
BOOST_AUTO_TEST_CASE(a_client_that_half_closes_after_two_pipelined_requests_gets_both_answers_then_the_close) {
  PathServer paths;
  RawConnection client(paths.server.port());
  client.send(get("/slow") + get("/after"));
  client.shut_down_sending();
  BOOST_TEST(body_of(client.read_response()) == "/slow");
  BOOST_TEST(body_of(client.read_response()) == "/after");
  BOOST_TEST(client.closed_by_peer(2000ms));
}

// Pipelined: the request behind a slow one is read only once the first answer is written, so one
// connection never has two handlers running and its answers come back in the order asked.
BOOST_AUTO_TEST_CASE(a_pipelined_request_behind_a_slow_one_waits_for_the_first_answer) {
  PathServer paths;
  RawConnection client(paths.server.port());
  client.send(get("/slow") + get("/second") + get("/third"));
  BOOST_TEST(body_of(client.read_response()) == "/slow");
  BOOST_TEST(body_of(client.read_response()) == "/second");
  BOOST_TEST(body_of(client.read_response()) == "/third");
  BOOST_TEST(paths.most_at_once.load() == 1);
}

// Moved mid-request: each answer goes out with the next request's first half already read ahead;
// a connection that moves then carries that half to the new thread, where the rest completes it.
BOOST_AUTO_TEST_CASE(a_connection_moved_to_another_thread_finishes_the_request_it_had_begun) {
  SpinningServer spinning(1ms);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, answered{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      RawConnection connection(spinning.server().port());
      std::string next = "/c" + std::to_string(c) + "-0";
      connection.send(get(next).substr(0, 9));  // "GET /cN-0": half a request line
      for (int i = 1; !stop; ++i) {
        auto whole = get(next);
        auto following = "/c" + std::to_string(c) + "-" + std::to_string(i);
        // The rest of this request and the first half of the next, in one write.
        connection.send(whole.substr(9) + get(following).substr(0, 9));
        auto response = connection.read_response();
        if (body_of(response) != next) {
          ++wrong;
          return;
        }
        ++answered;
        next = following;
      }
    });
  }
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (spinning.threads_seen() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  auto after = answered.load();
  while (answered < after + 200 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  stop = true;
  for (auto& client : clients) client.join();
  BOOST_TEST(spinning.threads_seen() == 2u);  // connections accepted on the first thread moved
  BOOST_TEST(wrong.load() == 0);
  BOOST_TEST(answered.load() >= after + 200);
  spinning.server().stop();
}

// Graceful stop while reading: a request that has begun is read to its end and answered, as the
// last one ("Connection: close"); only connections waiting for a request close at once.
BOOST_AUTO_TEST_CASE(stop_accepting_lets_a_request_being_read_finish_and_answers_it_as_the_last) {
  PathServer paths;
  RawConnection reading(paths.server.port());
  reading.send("GET /begun HTTP/1.1\r\nHo");
  std::this_thread::sleep_for(100ms);
  paths.server.stop_accepting();
  BOOST_TEST(!reading.closed_by_peer(200ms));
  reading.send("st: x\r\n\r\n");
  auto response = reading.read_response();
  BOOST_TEST(body_of(response) == "/begun");
  BOOST_TEST(header_of(response, "Connection") == "close");
  BOOST_TEST(reading.closed_by_peer(2000ms));
}

// Hard stop while reading: the half request is dropped and stop() does not wait for it.
BOOST_AUTO_TEST_CASE(stop_closes_a_connection_in_the_middle_of_a_request_at_once) {
  PathServer paths;
  RawConnection reading(paths.server.port());
  reading.send("POST /begun HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234");
  std::this_thread::sleep_for(100ms);
  auto started = std::chrono::steady_clock::now();
  paths.server.stop();
  BOOST_TEST(millis(std::chrono::steady_clock::now() - started) < 1000);
  BOOST_TEST(reading.closed_by_peer(1000ms));
  BOOST_TEST(reading.unread().empty());
}

// Graceful stop while writing: an answer under way arrives whole, and then the connection closes.
BOOST_AUTO_TEST_CASE(stop_accepting_while_an_answer_is_written_lets_it_arrive_whole_then_closes) {
  BigAnswerServer big;
  RawConnection client(big.server.port());
  client.send(get("/big"));
  auto head = client.read_head();  // the write is under way: the rest waits for the client to read
  BOOST_TEST_REQUIRE(status_of(head) == 200);
  big.server.stop_accepting();
  std::this_thread::sleep_for(100ms);
  BOOST_TEST(client.closed_by_peer(20000ms));  // reads on to the end, and the end comes after the answer
  BOOST_TEST((client.unread() == big_answer()));
  BOOST_TEST(big.server.wait_idle(2000ms));
}

// Hard stop while writing: the write is cut off, the request no longer counts in flight, and stop()
// does not wait out its grace period for a client that reads nothing.
BOOST_AUTO_TEST_CASE(stop_while_an_answer_is_written_cuts_it_off_at_once) {
  BigAnswerServer big;
  RawConnection client(big.server.port());
  client.send(get("/big"));
  BOOST_TEST_REQUIRE(status_of(client.read_head()) == 200);  // the write is under way
  BOOST_TEST(big.server.in_flight() == 1u);
  auto started = std::chrono::steady_clock::now();
  big.server.stop();
  BOOST_TEST(millis(std::chrono::steady_clock::now() - started) < 1000);
  BOOST_TEST(big.server.in_flight() == 0u);
  BOOST_TEST(client.closed_by_peer(5000ms));
}

// Graceful stop while idle: a connection waiting for its next request closes at once; one whose
// handler runs gets its answer first, marked as the last.
BOOST_AUTO_TEST_CASE(stop_accepting_closes_an_idle_connection_at_once_and_a_busy_one_after_its_answer) {
  PathServer paths(small_options(), 600ms);
  RawConnection idle(paths.server.port());
  idle.send(get("/first"));
  BOOST_TEST(body_of(idle.read_response()) == "/first");
  RawConnection busy(paths.server.port());
  busy.send(get("/slow"));
  paths.wait_for_slow_handler();
  paths.server.stop_accepting();
  auto started = std::chrono::steady_clock::now();
  BOOST_TEST(idle.closed_by_peer(2000ms));
  BOOST_TEST(millis(std::chrono::steady_clock::now() - started) < 400);  // not after the busy one's answer
  auto response = busy.read_response();
  BOOST_TEST(body_of(response) == "/slow");
  BOOST_TEST(header_of(response, "Connection") == "close");
  BOOST_TEST(busy.closed_by_peer(2000ms));
}

// Keep-alive idle timeout: it runs only while the connection waits for a request, not while the
// request's handler runs, however long; after the answer it runs again.
BOOST_AUTO_TEST_CASE(the_idle_timeout_runs_only_while_waiting_for_a_request_not_while_its_handler_runs) {
  auto options = small_options();
  options.idle_timeout = 300ms;
  PathServer paths(options, 900ms);
  RawConnection client(paths.server.port());
  client.send(get("/first"));
  BOOST_TEST(body_of(client.read_response()) == "/first");
  client.send(get("/slow"));  // handled for three idle timeouts
  BOOST_TEST(body_of(client.read_response(5000ms)) == "/slow");
  auto answered = std::chrono::steady_clock::now();
  BOOST_TEST(client.closed_by_peer(5000ms));
  auto idle = millis(std::chrono::steady_clock::now() - answered);
  BOOST_TEST(idle >= 200);
  BOOST_TEST(idle < 3000);
}

// An answer written while the request's body is still arriving (refused from its head): the client
// reads it, and the rest of the body it goes on sending is drained, not answered with a reset (over
// a real network a reset can overtake the answer and lose it); then the connection closes.
BOOST_AUTO_TEST_CASE(an_answer_refused_from_the_head_reaches_a_client_still_sending_its_body) {
  PathServer paths;
  RawConnection client(paths.server.port());
  client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n" + std::string(64 * 1024, 'a'));
  auto response = client.read_response();
  BOOST_TEST(status_of(response) == 413, response);
  BOOST_TEST(header_of(response, "Connection") == "close");
  std::this_thread::sleep_for(50ms);
  BOOST_CHECK_NO_THROW(client.send(std::string(256 * 1024, 'b')));
  BOOST_CHECK_NO_THROW(client.send(std::string(256 * 1024, 'c')));
  BOOST_TEST(client.closed_by_peer(5000ms));
}

BOOST_AUTO_TEST_SUITE_END()
