// Bare loopback test servers for the HTTP client's suites: a listening socket on a free port, and
// a server that counts the connections it accepts and the requests it answers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/http/client.hpp"

namespace rr::test {

// A request to one of these servers; a POST carries the small form body "a=1".
rr::http::ClientRequest request_to(const std::string& url, const std::string& method = "GET",
                                   std::chrono::milliseconds timeout = std::chrono::seconds(5));

// A listening socket on 127.0.0.1 and a free port (written to `port`).
int listen_on_loopback(std::uint16_t& port);

// Serves each connection on a thread of its own (a fiber's kept connection stays open beside
// others). Answers every request with "ok"; after `answers_per_connection` answers it closes the
// connection silently (as a server whose keep-alive timeout passed), without "Connection: close".
class CountingServer {
 public:
  explicit CountingServer(int answers_per_connection);
  ~CountingServer();
  CountingServer(const CountingServer&) = delete;
  CountingServer& operator=(const CountingServer&) = delete;

  std::uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/thing"; }
  int accepted() const { return accepted_; }
  int requests() const { return requests_; }

 private:
  void accept_all();
  void serve(int fd);

  int answers_per_connection_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::atomic<int> requests_{0};
  std::mutex mutex_;
  std::vector<int> open_;
  std::vector<std::thread> connections_;
  std::thread acceptor_;
};

}  // namespace rr::test
