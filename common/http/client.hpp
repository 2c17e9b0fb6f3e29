// A small blocking HTTP/1.1 client on Boost.Beast with one deadline for connect plus response;
// https:// verifies the server's certificate against the system store. Used for the payment
// provider and by tests. Called on a request fiber (common/fiber/fiber.hpp) it suspends the fiber
// instead of blocking its I/O thread.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace boost::asio {
class execution_context;
}

namespace rr::http {

struct ClientResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string header(std::string_view name) const;  // "" when absent; case-insensitive
};

// Every transport failure (DNS, refused, reset, TLS, timeout, malformed response).
class TransportError : public std::runtime_error {
 public:
  TransportError(std::string what, bool timed_out) : std::runtime_error(std::move(what)), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

struct ClientRequest {
  std::string method = "GET";
  std::string url;  // http://host:port/path?query or https://...
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{10000};
};

// Keeps connections open between requests (HTTP/1.1 keep-alive), one request per connection at
// a time, so a busy caller pays connect and TLS handshake once rather than per request. A kept
// connection the server closed meanwhile is retried once on a fresh one when sending twice is
// harmless (GET/HEAD/PUT/DELETE, or an Idempotency-Key header). Thread-safe.
//
// On a request fiber the connection lives on the fiber's I/O thread: connections kept for fibers
// are kept per I/O thread (its io_context), apart from those of blocking callers, each group
// within the limits below. Those of an io_context are dropped when it is destroyed.
class Client {
 public:
  // At most `max_idle` idle connections are kept (per group: blocking callers, each I/O thread) (0: none, every request
  // on a fresh one), each for at most `idle_limit`, below common servers' keep-alive timeouts.
  explicit Client(std::size_t max_idle = 64, std::chrono::milliseconds idle_limit = std::chrono::seconds(20));
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Throws TransportError. The timeout covers everything, a retry on a fresh connection included.
  ClientResponse send(const ClientRequest& request);
  std::size_t idle_connections() const;

  struct Session;
  struct Pool;

 private:
  // `home`: the fibers' io_context, or null for blocking callers.
  std::unique_ptr<Session> take_idle(const std::string& origin, boost::asio::execution_context* home);
  void give_back(std::unique_ptr<Session> session);

  std::size_t max_idle_;
  std::chrono::milliseconds idle_limit_;
  std::shared_ptr<Pool> pool_;  // shared with the io_contexts whose fibers keep connections here
};

// One request on a fresh connection, closed afterwards. Throws TransportError.
ClientResponse send(const ClientRequest& request);

}  // namespace rr::http
