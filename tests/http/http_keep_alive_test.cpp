// http::Client keeps connections between requests and recovers when the server closed one,
// against a bare loopback listener that counts the connections it accepts; on a kept connection it
// reads answers that arrive in pieces.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/fiber/fiber.hpp"
#include "common/http/client.hpp"
#include "support/counting_server.hpp"
#include "support/fibers.hpp"

using namespace std::chrono_literals;
using rr::test::CountingServer;
using rr::test::listen_on_loopback;
using rr::test::request_to;

namespace {

// http::Client and answers that arrive in more than one piece.
//
// Answers each request on one kept connection, first with an interim "103 Early Hints" (RFC 9110
// 15.2: a client MUST parse 1xx responses it did not expect and wait for the final one). Then the
// first request gets, a moment later, the final "200 first"; the second "200 second" at once; the
// third an empty chunked body whose last chunk comes with the head and whose ending CRLF comes a
// byte at a time (Boost 1.81's parser, handed the last chunk again with one byte more, asserts);
// the fourth a chunk line that never ends (2 MiB of extension, then nothing, the connection open).
class PiecemealAnswersServer {
 public:
  PiecemealAnswersServer() {
    listener_ = listen_on_loopback(port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~PiecemealAnswersServer() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/charges"; }

 private:
  static bool read_request(int fd, std::string& buffer) {
    char chunk[4096];
    for (;;) {
      auto end = buffer.find("\r\n\r\n");
      if (end != std::string::npos) {
        auto length_at = buffer.find("Content-Length: ");
        std::size_t body =
            length_at != std::string::npos && length_at < end ? std::stoul(buffer.substr(length_at + 16)) : 0;
        if (buffer.size() >= end + 4 + body) {
          buffer.erase(0, end + 4 + body);
          return true;
        }
      }
      auto n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }
  static void say(int fd, std::string_view text) { ::send(fd, text.data(), text.size(), MSG_NOSIGNAL); }

  void serve() {
    for (;;) {
      int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      std::string buffer;
      int served = 0;
      while (read_request(fd, buffer)) {
        say(fd, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n");
        if (served == 0) {
          std::this_thread::sleep_for(100ms);
          say(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst");
        } else if (served == 1) {
          // The interim answer and the final one in one write: read together, parsed apart.
          say(fd, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond");
        } else if (served == 2) {
          say(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
          for (std::string_view byte : {"\r", "\n"}) {
            std::this_thread::sleep_for(50ms);
            say(fd, byte);
          }
        } else {
          say(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;x=");
          const std::string extension(64 * 1024, 'a');
          for (int i = 0; i < 32; ++i) say(fd, extension);
        }
        ++served;
      }
      ::close(fd);
    }
  }

  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

rr::http::ClientRequest charge_request(const std::string& url, const std::string& key) {
  rr::http::ClientRequest request;
  request.method = "POST";
  request.url = url;
  request.headers = {{"Idempotency-Key", key}, {"Content-Type", "application/x-www-form-urlencoded"}};
  request.body = "amount=100";
  request.timeout = 2000ms;
  return request;
}

// The fourth answer: refused once the unparsed line passes the client's bound (1 MiB), not
// buffered until the request's 2 s deadline.
void expect_refused_at_once(rr::http::Client& client, const std::string& url) {
  try {
    client.send(charge_request(url, "charge-key-D"));
    BOOST_ERROR("an answer whose chunk line never ends was taken");
  } catch (const rr::http::TransportError& e) {
    BOOST_TEST(!e.timed_out(), e.what());
    BOOST_TEST(std::string(e.what()).find("runs past 1048576 bytes") != std::string::npos, e.what());
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http_keep_alive)

BOOST_AUTO_TEST_CASE(consecutive_requests_share_one_connection) {
  CountingServer server(1000);
  rr::http::Client client;
  for (int i = 0; i < 5; ++i) BOOST_TEST(client.send(request_to(server.url())).body == "ok");
  BOOST_TEST(server.requests() == 5);
  BOOST_TEST(server.accepted() == 1);
  BOOST_TEST(client.idle_connections() == 1u);
}

BOOST_AUTO_TEST_CASE(the_one_shot_send_opens_a_connection_per_request) {
  CountingServer server(1000);
  for (int i = 0; i < 3; ++i) BOOST_TEST(rr::http::send(request_to(server.url())).body == "ok");
  BOOST_TEST(server.accepted() == 3);
}

BOOST_AUTO_TEST_CASE(a_kept_connection_the_server_closed_is_retried_on_a_fresh_one_when_safe) {
  CountingServer server(1);  // closes after every answer, without saying so
  rr::http::Client client;
  BOOST_TEST(client.send(request_to(server.url())).body == "ok");
  std::this_thread::sleep_for(50ms);  // let the close arrive
  BOOST_TEST(client.send(request_to(server.url())).body == "ok");
  auto with_key = request_to(server.url(), "POST");
  with_key.headers = {{"Idempotency-Key", "key-0000000000000000001"}};
  std::this_thread::sleep_for(50ms);
  BOOST_TEST(client.send(with_key).body == "ok");
  BOOST_TEST(server.requests() == 3);
  BOOST_TEST(server.accepted() == 3);
}

BOOST_AUTO_TEST_CASE(a_post_without_an_idempotency_key_is_never_sent_twice) {
  CountingServer server(1);
  rr::http::Client client;
  BOOST_TEST(client.send(request_to(server.url())).body == "ok");
  std::this_thread::sleep_for(50ms);
  // The kept connection is dead; re-sending a plain POST could do its work twice, so it fails.
  BOOST_CHECK_THROW(client.send(request_to(server.url(), "POST")), rr::http::TransportError);
  BOOST_TEST(server.requests() == 1);
  // The dead connection is gone: the next request opens a fresh one.
  BOOST_TEST(client.send(request_to(server.url(), "POST")).body == "ok");
  BOOST_TEST(server.requests() == 2);
}

BOOST_AUTO_TEST_CASE(a_client_without_room_for_idle_connections_keeps_none) {
  CountingServer server(1000);
  rr::http::Client client(0);
  for (int i = 0; i < 3; ++i) client.send(request_to(server.url()));
  BOOST_TEST(server.accepted() == 3);
  BOOST_TEST(client.idle_connections() == 0u);
}

// From review: an interim 1xx taken for the final answer would leave that answer on the kept
// connection, to be read as the answer to the next request: one charge's answer for another's.
BOOST_AUTO_TEST_CASE(client_waits_past_interim_responses_and_never_hands_one_request_anothers_answer) {
  PiecemealAnswersServer server;
  rr::http::Client client;
  auto first = client.send(charge_request(server.url(), "charge-key-A"));
  BOOST_TEST(first.status == 200);
  BOOST_TEST(first.body == "first");
  std::this_thread::sleep_for(200ms);  // the final answer to the first request has arrived by now
  auto second = client.send(charge_request(server.url(), "charge-key-B"));
  BOOST_TEST(second.status == 200);
  BOOST_TEST(second.body == "second");  // not "first": that answer belongs to charge-key-A
  auto third = client.send(charge_request(server.url(), "charge-key-C"));
  BOOST_TEST(third.status == 200);
  BOOST_TEST(third.body.empty());
  expect_refused_at_once(client, server.url());
}

// The same on a request fiber, whose request on a kept connection is written and read on the fiber
// itself (round_trip_on_fiber), not by Beast's asynchronous operations.
BOOST_AUTO_TEST_CASE(a_fiber_waits_past_interim_responses_on_a_kept_connection_too) {
  PiecemealAnswersServer server;
  rr::http::Client client;
  rr::http::ClientResponse first, second, third;
  rr::testing::run_fibers({[&] {
    first = client.send(charge_request(server.url(), "charge-key-A"));
    rr::fiber::sleep_for(200ms);
    second = client.send(charge_request(server.url(), "charge-key-B"));
    third = client.send(charge_request(server.url(), "charge-key-C"));
    expect_refused_at_once(client, server.url());
  }});
  BOOST_TEST(first.body == "first");
  BOOST_TEST(second.status == 200);
  BOOST_TEST(second.body == "second");
  BOOST_TEST(second.header("Link").empty());  // the interim answer's header is not the final one's
  BOOST_TEST(third.status == 200);
  BOOST_TEST(third.body.empty());
}

BOOST_AUTO_TEST_SUITE_END()
