// The HTTP server and client over real loopback sockets: keep-alive, limits, malformed input,
// failing handlers, slow clients, graceful stop, deadlines and the form codec.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "common/http/server.hpp"
#include "support/plain_text.hpp"
#include "support/polling.hpp"
#include "support/process.hpp"
#include "support/raw_connection.hpp"
#include "support/server_options.hpp"

using rr::test::plain_text;
using namespace std::chrono_literals;
using rr::http::ClientRequest;
using rr::http::Request;
using rr::http::Response;
using rr::test::millis;
using rr::test::small_options;

namespace {

using rr::test::body_of;
using rr::test::RawConnection;
using rr::test::status_of;

std::string url(const rr::http::Server& server, const std::string& path) {
  return "http://127.0.0.1:" + std::to_string(server.port()) + path;
}

rr::http::ClientResponse get(const rr::http::Server& server, const std::string& path) {
  ClientRequest request;
  request.url = url(server, path);
  request.timeout = 5000ms;
  return rr::http::send(request);
}

// A started server that answers every request with "served", for the tests of timeouts.
std::unique_ptr<rr::http::Server> serving(const rr::http::ServerOptions& options) {
  auto server = std::make_unique<rr::http::Server>(options, [](const Request&) { return plain_text("served"); });
  server->start();
  return server;
}

// Certificates for the https tests, made once per process with the openssl command line. The
// trust store is pointed at two of them (OpenSSL reads SSL_CERT_FILE when the client first
// loads its default verify paths), so a third stays untrusted.
struct TestCertificates {
  std::string dir;
  TestCertificates() {
    char pattern[] = "/tmp/rr-tls-XXXXXX";
    dir = ::mkdtemp(pattern);
    make("localhost", "DNS:localhost,IP:127.0.0.1");
    make("elsewhere", "DNS:payments.example.com");
    make("untrusted", "DNS:localhost,IP:127.0.0.1");
    std::string bundle = dir + "/trusted-bundle.pem";
    auto result =
        rr::test::run_command({"/bin/sh", "-c", "cat " + dir + "/localhost.crt " + dir + "/elsewhere.crt > " + bundle});
    if (result.exit_code != 0) throw std::runtime_error("cannot write the trust bundle");
    ::setenv("SSL_CERT_FILE", bundle.c_str(), 1);
  }
  ~TestCertificates() { rr::test::run_command({"/bin/rm", "-rf", dir}); }

  void make(const std::string& name, const std::string& alt_names) {
    auto result = rr::test::run_command({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                         "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=" + name,
                                         "-addext", "subjectAltName=" + alt_names, "-keyout", dir + "/" + name + ".key",
                                         "-out", dir + "/" + name + ".crt"});
    if (result.exit_code != 0) throw std::runtime_error("openssl req failed: " + result.err);
  }
};

const TestCertificates& certificates() {
  static TestCertificates instance;
  return instance;
}

// `openssl s_server -www` with one of the test certificates: answers GET / with a status page.
class TlsServer {
 public:
  explicit TlsServer(const std::string& certificate) : port_(rr::test::free_port()) {
    const auto& dir = certificates().dir;
    process_ = std::make_unique<rr::test::ChildProcess>(std::vector<std::string>{
        "/usr/bin/openssl", "s_server", "-quiet", "-www", "-accept", "127.0.0.1:" + std::to_string(port_), "-cert",
        dir + "/" + certificate + ".crt", "-key", dir + "/" + certificate + ".key"});
    if (!rr::test::wait_for_port(port_, 10s)) throw std::runtime_error("openssl s_server did not start");
  }
  std::string url(const std::string& host) const { return "https://" + host + ":" + std::to_string(port_) + "/"; }

 private:
  std::uint16_t port_;
  std::unique_ptr<rr::test::ChildProcess> process_;
};

// The TransportError that `url` fails with, if any.
std::optional<rr::http::TransportError> failure_of(const std::string& url) {
  ClientRequest request;
  request.url = url;
  request.timeout = 5000ms;
  try {
    rr::http::send(request);
  } catch (const rr::http::TransportError& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http_server)

BOOST_AUTO_TEST_CASE(serves_two_requests_on_one_kept_alive_connection) {
  rr::http::Server server(small_options(), [](const Request& request) { return plain_text("path " + request.path); });
  server.start();
  RawConnection connection(server.port());
  connection.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string first = connection.read_response();
  BOOST_TEST(first.starts_with("HTTP/1.1 200"));
  BOOST_TEST(first.ends_with("path /one"));
  BOOST_TEST(first.find("Connection: close") == std::string::npos);
  connection.send("GET /two?x=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string second = connection.read_response();
  BOOST_TEST(second.starts_with("HTTP/1.1 200"));
  BOOST_TEST(second.ends_with("path /two"));
}

BOOST_AUTO_TEST_CASE(response_carries_status_content_type_extra_headers_and_server_name) {
  rr::http::Server server(small_options(), [](const Request& request) {
    Response response;
    response.status = 201;
    response.content_type = "application/json";
    response.body = R"({"peer":")" + request.remote_address + R"(","query":")" + request.query + "\"}";
    response.with_header("Idempotent-Replayed", "true");
    return response;
  });
  server.start();
  auto response = get(server, "/rides?limit=5");
  BOOST_TEST(response.status == 201);
  BOOST_TEST(response.header("content-type") == "application/json");
  BOOST_TEST(response.header("idempotent-replayed") == "true");
  BOOST_TEST(response.header("server") == "rocket-rides");
  BOOST_TEST(response.header("content-length") == std::to_string(response.body.size()));
  BOOST_TEST(response.body == R"({"peer":"127.0.0.1","query":"limit=5"})");
}

BOOST_AUTO_TEST_CASE(answers_413_with_a_json_error_when_the_body_is_over_the_limit) {
  std::atomic<int> calls{0};
  rr::http::Server server(small_options(), [&](const Request&) {
    ++calls;
    return plain_text("handled");
  });
  server.start();
  RawConnection connection(server.port());
  connection.send("POST /rides HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'a'));
  std::string response = connection.read_response();
  BOOST_TEST(response.starts_with("HTTP/1.1 413"));
  BOOST_TEST(response.find(R"({"error":{"type":"invalid_request_error","message":")") != std::string::npos);
  BOOST_TEST(connection.closed_by_peer());
  BOOST_TEST(calls == 0);
}

BOOST_AUTO_TEST_CASE(answers_413_when_a_chunked_body_grows_over_the_limit) {
  rr::http::Server server(small_options(), [](const Request&) { return plain_text("handled"); });
  server.start();
  RawConnection connection(server.port());
  std::string chunk(800, 'b');
  connection.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n320\r\n" + chunk + "\r\n320\r\n" +
                  chunk + "\r\n0\r\n\r\n");
  BOOST_TEST(connection.read_response().starts_with("HTTP/1.1 413"));
  BOOST_TEST(connection.closed_by_peer());
}

BOOST_AUTO_TEST_CASE(a_client_expecting_100_continue_is_told_to_send_its_body) {
  rr::http::Server server(small_options(), [](const Request& request) { return plain_text("got " + request.body); });
  server.start();
  RawConnection connection(server.port());
  connection.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
  BOOST_TEST(connection.read_response() == "HTTP/1.1 100 Continue\r\n\r\n");
  connection.send("body");
  auto response = connection.read_response();
  BOOST_TEST(response.starts_with("HTTP/1.1 200"));
  BOOST_TEST(response.ends_with("got body"));
}

BOOST_AUTO_TEST_CASE(answers_400_with_a_json_error_to_a_malformed_request_and_closes) {
  std::atomic<int> calls{0};
  rr::http::Server server(small_options(), [&](const Request&) {
    ++calls;
    return plain_text("handled");
  });
  server.start();
  RawConnection connection(server.port());
  connection.send("THIS IS NOT HTTP AT ALL\r\n\r\n");
  std::string response = connection.read_response();
  BOOST_TEST(response.starts_with("HTTP/1.1 400"));
  BOOST_TEST(response.find("Content-Type: application/json") != std::string::npos);
  BOOST_TEST(response.find(R"("type":"invalid_request_error")") != std::string::npos);
  BOOST_TEST(connection.closed_by_peer());
  BOOST_TEST(calls == 0);
}

BOOST_AUTO_TEST_CASE(a_throwing_handler_becomes_a_500_and_the_server_keeps_serving) {
  rr::http::Server server(small_options(), [](const Request& request) {
    if (request.path == "/boom") throw std::runtime_error("handler bug");
    return plain_text("fine");
  });
  server.start();
  auto failed = get(server, "/boom");
  BOOST_TEST(failed.status == 500);
  BOOST_TEST(failed.header("content-type") == "application/json");
  BOOST_TEST(failed.body.starts_with(R"({"error":{"type":"api_error")"));
  BOOST_TEST(failed.body.find("handler bug") == std::string::npos);  // internals stay in the log
  auto next = get(server, "/ok");
  BOOST_TEST(next.status == 200);
  BOOST_TEST(next.body == "fine");
}

BOOST_AUTO_TEST_CASE(a_client_that_sends_half_a_request_does_not_block_another_client) {
  auto options = small_options();
  options.io_threads = 1;
  options.worker_threads = 1;
  rr::http::Server server(options, [](const Request&) { return plain_text("served"); });
  server.start();
  RawConnection slow(server.port());
  slow.send("POST /rides HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf a bo");
  auto started = std::chrono::steady_clock::now();
  auto response = get(server, "/");
  auto elapsed = std::chrono::steady_clock::now() - started;
  BOOST_TEST(response.status == 200);
  BOOST_TEST(response.body == "served");
  BOOST_TEST(millis(elapsed) < 1000);
  BOOST_TEST(slow.read_response(100ms).empty());  // the half request is still waiting, unanswered
}

// Requests are parsed from what one read brought when it holds them whole; a pipeline of them in
// one write is answered one by one, in order, whether answered on the I/O thread or a worker.
BOOST_AUTO_TEST_CASE(pipelined_requests_in_one_write_are_answered_in_order) {
  rr::http::Server server(
      small_options(), [](const Request& request) { return plain_text("worker " + request.target); },
      rr::http::InMemoryHandler([](const Request& request) -> std::optional<Response> {
        if (request.path == "/memory") return plain_text("memory " + request.target);
        return std::nullopt;
      }));
  server.start();
  RawConnection client(server.port());
  constexpr int kRequests = 200;
  std::string pipeline;
  for (int i = 0; i < kRequests; ++i) {
    std::string path = i % 3 == 0 ? "/worker" : "/memory";
    if (i % 2 == 0) {
      pipeline += "GET " + path + "?n=" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
    } else {
      pipeline += "POST " + path + "?n=" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody";
    }
  }
  client.send(pipeline);
  for (int i = 0; i < kRequests; ++i) {
    auto response = client.read_response(5000ms);
    std::string expected = (i % 3 == 0 ? "worker /worker?n=" : "memory /memory?n=") + std::to_string(i);
    BOOST_REQUIRE_MESSAGE(body_of(response) == expected, i << ": " << response);
  }
}

BOOST_AUTO_TEST_CASE(a_request_whose_head_and_body_arrive_in_pieces_is_served_whole) {
  rr::http::Server server(small_options(), [](const Request& request) { return plain_text(request.body); });
  server.start();
  RawConnection client(server.port());
  for (std::string_view piece :
       {"POST / HTT", "P/1.1\r\nHost: x\r\nContent-Le", "ngth: 10\r\n\r\n", "01234", "56789"}) {
    client.send(piece);
    std::this_thread::sleep_for(30ms);
  }
  auto response = client.read_response(5000ms);
  BOOST_TEST(status_of(response) == 200, response);
  BOOST_TEST(body_of(response) == "0123456789");
  // And the connection goes on with the next request.
  client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(status_of(client.read_response(5000ms)) == 200);
}

// An answer the socket cannot take at once goes on asynchronously from where the first write
// stopped: the client gets every byte, in order, and then the next answer.
BOOST_AUTO_TEST_CASE(an_answer_larger_than_the_socket_buffer_arrives_whole) {
  std::string big;
  for (int i = 0; big.size() < 16 * 1024 * 1024; ++i) big += std::to_string(i) + ",";
  rr::http::Server server(
      small_options(), [&big](const Request& request) { return plain_text(request.path == "/big" ? big : "small"); });
  server.start();
  RawConnection client(server.port());
  client.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /small HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(200ms);  // the server fills the socket and must wait for the reader
  auto response = client.read_response(20000ms);
  BOOST_TEST(status_of(response) == 200);
  BOOST_TEST((body_of(response) == big));
  BOOST_TEST(body_of(client.read_response(5000ms)) == "small");
}

BOOST_AUTO_TEST_CASE(a_request_that_stalls_past_the_read_timeout_is_closed) {
  auto options = small_options();
  options.read_timeout = 300ms;
  auto server = serving(options);
  RawConnection slow(server->port());
  slow.send("GET / HTTP/1.1\r\nHost: x\r\n");
  auto started = std::chrono::steady_clock::now();
  BOOST_TEST(slow.closed_by_peer(5000ms));
  BOOST_TEST(millis(std::chrono::steady_clock::now() - started) < 3000);
}

// The keep-alive wait before each request has no timer of its own: the I/O thread's sweep closes
// it past the idle timeout (IdleSweep), and not before.
BOOST_AUTO_TEST_CASE(a_kept_connection_idle_past_the_idle_timeout_is_closed_and_not_before) {
  auto options = small_options();
  options.idle_timeout = 400ms;
  auto server = serving(options);
  RawConnection client(server->port());
  client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(body_of(client.read_response(5000ms)) == "served");
  auto answered = std::chrono::steady_clock::now();
  BOOST_TEST(client.closed_by_peer(5000ms));
  auto idle = millis(std::chrono::steady_clock::now() - answered);
  BOOST_TEST(idle >= 300);  // the wait began before the answer reached us, by a little
  BOOST_TEST(idle < 3000);
}

BOOST_AUTO_TEST_CASE(a_kept_connection_that_goes_on_sending_is_not_closed_by_the_idle_timeout) {
  auto options = small_options();
  options.idle_timeout = 300ms;
  auto server = serving(options);
  RawConnection client(server->port());
  // Two seconds of requests 150 ms apart: every wait is shorter than the timeout, the whole far longer.
  for (int i = 0; i < 13; ++i) {
    client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    BOOST_TEST_REQUIRE(body_of(client.read_response(5000ms)) == "served");
    std::this_thread::sleep_for(150ms);
  }
}

BOOST_AUTO_TEST_CASE(a_connection_that_never_sends_a_byte_is_closed_at_the_read_timeout) {
  auto options = small_options();
  options.read_timeout = 300ms;
  options.idle_timeout = 60000ms;
  auto server = serving(options);
  auto started = std::chrono::steady_clock::now();
  RawConnection silent(server->port());
  BOOST_TEST(silent.closed_by_peer(5000ms));
  auto lived = millis(std::chrono::steady_clock::now() - started);
  BOOST_TEST(lived >= 250);
  BOOST_TEST(lived < 3000);
}

BOOST_AUTO_TEST_CASE(stop_accepting_and_wait_idle_let_an_in_flight_slow_handler_finish) {
  std::promise<void> handler_started;
  rr::http::Server server(small_options(), [&](const Request&) {
    handler_started.set_value();
    std::this_thread::sleep_for(700ms);
    return plain_text("finished");
  });
  server.start();
  auto port = server.port();
  RawConnection connection(port);
  connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_REQUIRE(handler_started.get_future().wait_for(5s) == std::future_status::ready);
  BOOST_TEST(server.in_flight() == 1u);

  server.stop_accepting();
  BOOST_TEST(!server.wait_idle(50ms));  // the handler is still sleeping
  BOOST_TEST(server.wait_idle(5000ms));
  BOOST_TEST(server.in_flight() == 0u);
  std::string response = connection.read_response();
  BOOST_TEST(response.starts_with("HTTP/1.1 200"));
  BOOST_TEST(response.ends_with("finished"));
  // The client asked to keep the connection; a stopping server says it will close it.
  BOOST_TEST(response.find("Connection: close") != std::string::npos);
  BOOST_TEST(connection.closed_by_peer());
  BOOST_CHECK_THROW(RawConnection{port}, std::runtime_error);  // the listener is gone
  server.stop();
  server.stop();  // idempotent
}

BOOST_AUTO_TEST_CASE(in_memory_answers_come_from_the_io_thread_while_every_worker_is_busy) {
  auto options = small_options();
  options.worker_threads = 1;
  std::promise<void> worker_busy;
  std::promise<void> release_worker;
  auto released = release_worker.get_future().share();
  std::atomic<int> worker_calls{0};
  rr::http::Server server(
      options,
      [&](const Request&) {
        if (worker_calls++ == 0) {
          worker_busy.set_value();
          released.wait_for(10s);
        }
        return plain_text("from a worker");
      },
      [](const Request& request) -> std::optional<Response> {
        if (request.path == "/known") return plain_text("from memory");
        if (request.path == "/throws") throw std::runtime_error("in-memory failure");
        return std::nullopt;
      });
  server.start();
  RawConnection blocker(server.port());
  blocker.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_REQUIRE(worker_busy.get_future().wait_for(5s) == std::future_status::ready);

  // The only worker is stuck, yet a known answer arrives at once.
  RawConnection fast(server.port());
  fast.send("GET /known HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string answer = fast.read_response(2000ms);
  BOOST_TEST(answer.starts_with("HTTP/1.1 200"));
  BOOST_TEST(answer.ends_with("from memory"));
  BOOST_TEST(worker_calls.load() == 1);

  // Unknown (and failing) in-memory lookups fall through to the workers.
  fast.send("GET /throws HTTP/1.1\r\nHost: x\r\n\r\n");
  release_worker.set_value();
  BOOST_TEST(blocker.read_response().ends_with("from a worker"));
  BOOST_TEST(fast.read_response().ends_with("from a worker"));
  BOOST_TEST(worker_calls.load() == 2);
}

BOOST_AUTO_TEST_CASE(stop_accepting_closes_idle_kept_alive_connections) {
  rr::http::Server server(small_options(), [](const Request&) { return plain_text("ok"); });
  server.start();
  RawConnection connection(server.port());
  connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(connection.read_response().starts_with("HTTP/1.1 200"));
  server.stop_accepting();
  BOOST_TEST(connection.closed_by_peer(2000ms));
}

BOOST_AUTO_TEST_CASE(after_close_connections_after_each_answer_the_server_still_accepts_but_closes_after_answering) {
  rr::http::Server server(
      small_options(), [](const Request& request) { return plain_text("worker " + request.path); },
      [](const Request& request) -> std::optional<Response> {
        if (request.path == "/memory") return plain_text("memory");
        return std::nullopt;
      });
  server.start();
  RawConnection kept(server.port());
  kept.send("GET /before HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string before = kept.read_response();
  BOOST_TEST(before.starts_with("HTTP/1.1 200"));
  BOOST_TEST(before.find("Connection: close") == std::string::npos);

  server.close_connections_after_each_answer();
  // The kept-alive connection's next answer says close, then the server closes it.
  kept.send("GET /during HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string during = kept.read_response();
  BOOST_TEST(during.starts_with("HTTP/1.1 200"));
  BOOST_TEST(during.ends_with("worker /during"));
  BOOST_TEST(during.find("Connection: close") != std::string::npos);
  BOOST_TEST(kept.closed_by_peer());
  // New connections are still accepted and answered, from memory too, each closed after.
  for (const char* path : {"/fresh", "/memory"}) {
    RawConnection fresh(server.port());
    fresh.send(std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string answer = fresh.read_response();
    BOOST_TEST(answer.starts_with("HTTP/1.1 200"), path);
    BOOST_TEST(answer.find("Connection: close") != std::string::npos, path);
    BOOST_TEST(fresh.closed_by_peer(), path);
  }
}

BOOST_AUTO_TEST_CASE(the_drop_marker_closes_the_connection_without_a_response) {
  std::atomic<int> calls{0};
  auto options = small_options();
  options.drop_marked_answers = true;  // as the stand-in provider sets it
  rr::http::Server server(options, [&](const Request&) {
    ++calls;
    return plain_text("never sent").with_header(std::string(rr::http::kDropConnectionHeader), "1");
  });
  server.start();
  RawConnection connection(server.port());
  connection.send("POST /v1/charges HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  BOOST_TEST(connection.closed_by_peer());
  BOOST_TEST(connection.unread() == "");
  BOOST_TEST(calls == 1);
  BOOST_TEST(server.wait_idle(1000ms));
}

BOOST_AUTO_TEST_CASE(without_the_option_the_drop_marker_is_an_ordinary_header) {
  // A server that was not asked to honour it (every server but the stand-in provider) answers.
  rr::http::Server server(small_options(), [](const Request&) {
    return plain_text("sent").with_header(std::string(rr::http::kDropConnectionHeader), "1");
  });
  server.start();
  RawConnection connection(server.port());
  connection.send("POST /v1/charges HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  std::string answer = connection.read_response();
  BOOST_TEST(answer.starts_with("HTTP/1.1 200"));
  BOOST_TEST(answer.find("X-Rr-Drop-Connection: 1") != std::string::npos);
  BOOST_TEST(answer.ends_with("sent"));
}

BOOST_AUTO_TEST_CASE(start_throws_when_the_port_is_taken) {
  rr::http::Server first(small_options(), [](const Request&) { return plain_text("first"); });
  first.start();
  auto options = small_options();
  options.port = first.port();
  rr::http::Server second(options, [](const Request&) { return plain_text("second"); });
  BOOST_CHECK_THROW(second.start(), std::system_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(http_client)

BOOST_AUTO_TEST_CASE(client_times_out_against_a_server_that_never_answers) {
  // A listener that never accepts: the kernel completes the handshake, nobody ever replies.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_REQUIRE(::listen(fd, 16) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);

  ClientRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/v1/charges";
  request.method = "POST";
  request.timeout = 300ms;
  auto started = std::chrono::steady_clock::now();
  std::optional<rr::http::TransportError> error;
  try {
    rr::http::send(request);
  } catch (const rr::http::TransportError& e) {
    error = e;
  }
  auto elapsed = std::chrono::steady_clock::now() - started;
  ::close(fd);
  BOOST_REQUIRE(error.has_value());
  BOOST_TEST(error->timed_out());
  BOOST_TEST(millis(elapsed) >= 300);
  BOOST_TEST(millis(elapsed) < 3000);
}

BOOST_AUTO_TEST_CASE(client_reports_a_refused_connection_as_a_transport_error_that_is_not_a_timeout) {
  ClientRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(rr::test::free_port()) + "/";
  std::optional<rr::http::TransportError> error;
  try {
    rr::http::send(request);
  } catch (const rr::http::TransportError& e) {
    error = e;
  }
  BOOST_REQUIRE(error.has_value());
  BOOST_TEST(!error->timed_out());
  BOOST_TEST(std::string(error->what()).find("connect") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(client_sends_method_headers_and_body_to_the_server) {
  rr::http::Server server(small_options(), [](const Request& request) {
    return plain_text(request.method + "|" + std::string(request.header("x-token").value_or("")) + "|" + request.body);
  });
  server.start();
  ClientRequest request;
  request.method = "PUT";
  request.url = url(server, "/things");
  request.headers = {{"X-Token", "abc"}};
  request.body = "payload";
  BOOST_TEST(rr::http::send(request).body == "PUT|abc|payload");
}

BOOST_AUTO_TEST_CASE(client_refuses_header_values_with_line_breaks) {
  ClientRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(rr::test::free_port()) + "/";
  request.headers = {{"Idempotency-Key", "abc\r\nX-Injected: 1"}};
  std::optional<rr::http::TransportError> error;
  try {
    rr::http::send(request);
  } catch (const rr::http::TransportError& e) {
    error = e;
  }
  BOOST_REQUIRE(error.has_value());
  BOOST_TEST(std::string(error->what()).find("Idempotency-Key") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(client_rejects_a_url_that_is_not_http) {
  ClientRequest request;
  request.url = "ftp://example.com/";
  BOOST_CHECK_THROW(rr::http::send(request), rr::http::TransportError);
}

BOOST_AUTO_TEST_CASE(https_to_a_trusted_certificate_for_the_host_succeeds) {
  certificates();
  TlsServer server("localhost");
  for (std::string host : {"localhost", "127.0.0.1"}) {
    BOOST_TEST_CONTEXT(host) {
      ClientRequest request;
      request.url = server.url(host);
      auto response = rr::http::send(request);
      BOOST_TEST(response.status == 200);
      BOOST_TEST(response.body.find("<HTML>") != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(https_rejects_a_trusted_certificate_issued_for_another_host) {
  certificates();
  TlsServer server("elsewhere");
  auto error = failure_of(server.url("localhost"));
  BOOST_REQUIRE(error.has_value());
  BOOST_TEST(!error->timed_out());
  BOOST_TEST(std::string(error->what()).find("TLS handshake") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(https_rejects_a_certificate_the_trust_store_does_not_hold) {
  certificates();
  TlsServer server("untrusted");
  auto error = failure_of(server.url("localhost"));
  BOOST_REQUIRE(error.has_value());
  BOOST_TEST(!error->timed_out());
  BOOST_TEST(std::string(error->what()).find("TLS handshake") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(form_encode_round_trips_through_form_decode) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"description", "Ride from 1 & 2 = 100% fun"}, {"customer", "cus_abc"}, {"empty", ""}, {"utf8", "caf\xc3\xa9"}};
  std::string encoded = rr::http::form_encode(fields);
  BOOST_TEST(encoded.find(' ') == std::string::npos);
  BOOST_TEST(encoded.find("Ride+from+1+%26+2+%3D+100%25+fun") != std::string::npos);
  std::vector<std::pair<std::string, std::string>> decoded;
  BOOST_TEST(rr::http::form_decode(encoded, decoded));
  BOOST_TEST((decoded == fields));
}

BOOST_AUTO_TEST_CASE(form_decode_reads_plus_as_space_and_rejects_malformed_escapes) {
  std::vector<std::pair<std::string, std::string>> out;
  BOOST_TEST(rr::http::form_decode("a=b+c&flag&x=%41%2b", out));
  BOOST_REQUIRE(out.size() == 3u);
  BOOST_TEST(out[0].second == "b c");
  BOOST_TEST(out[1].first == "flag");
  BOOST_TEST(out[1].second == "");
  BOOST_TEST(out[2].second == "A+");
  std::vector<std::pair<std::string, std::string>> bad;
  BOOST_TEST(!rr::http::form_decode("a=%zz", bad));
  BOOST_TEST(!rr::http::form_decode("a=%4", bad));
  BOOST_TEST(!rr::http::form_decode("a=100%", bad));
}

BOOST_AUTO_TEST_SUITE_END()
