// An HTTP/1.1 server on Boost.Beast/Asio: I/O threads read and write, and each complete request is
// answered there by the triage, handed to a worker pool that runs the (blocking) handler, or run
// as a fiber on its I/O thread (Lane::fibers) when its handler's waits suspend rather than block.
// Used by the API and the stand-in provider, and by the daemons' optional metrics endpoints.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/http/dispatch.hpp"
#include "common/http/message.hpp"
#include "common/http/trusted_proxies.hpp"

namespace rr::http {

// With ServerOptions::drop_marked_answers, a handler that returns a Response carrying this header
// (any value) makes the server close the connection without writing anything: the client sees its
// request vanish. Only the stand-in provider uses it, to simulate a charge recorded whose answer
// never arrived.
inline constexpr std::string_view kDropConnectionHeader = "X-Rr-Drop-Connection";

struct ServerOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;  // 0 picks a free port; see Server::port()
  std::size_t io_threads = 1;
  std::size_t worker_threads = 16;
  std::chrono::milliseconds read_timeout{30000};  // whole request, headers and body
  std::chrono::milliseconds idle_timeout{60000};  // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{30000};
  std::size_t header_limit = 16 * 1024;
  std::size_t body_limit = 64 * 1024;  // larger bodies get 413
  std::size_t max_requests_per_connection = 10000;
  // Open connections at most (0: no cap); keep it below the descriptor limit. At the cap a new
  // connection replaces the oldest one with no request in progress (see ConnectionLimit).
  std::size_t max_connections = 0;
  // Requests waiting for a worker at most (0: no bound); beyond it a request is answered 503 with
  // Retry-After at once instead of waiting without bound.
  std::size_t max_queued_requests = 0;
  // Threads of Lane::control; 0 runs that lane on the workers.
  std::size_t control_threads = 0;
  // Requests running as fibers at once at most (Lane::fibers); beyond it, and with 0, they go to
  // the workers' queue as Lane::workers requests do.
  std::size_t max_fibers = 0;
  // Peers whose X-Forwarded-For names the client (Request::remote_address); from others it is
  // ignored.
  TrustedProxies trusted_proxies;
  // Honour kDropConnectionHeader (a fault the stand-in provider injects). Off, the default, that
  // header is written like any other: a real server answers every request it read.
  bool drop_marked_answers = false;
};

class Server {
 public:
  Server(ServerOptions options, Handler handler, InMemoryHandler in_memory = nullptr);
  // With a triage on the I/O thread that answers or picks each request's lane.
  Server(ServerOptions options, Handler handler, Triage triage);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the threads. Throws std::system_error when the port is taken.
  void start();
  std::uint16_t port() const;
  // Graceful stop, step zero (optional): keep accepting and serving, but answer every request
  // with "Connection: close" and close the connection after it: a load balancer's pooled
  // connection is then closed right after an answer it reads, not later while idle, when a
  // request it sends could cross our close and fail.
  void close_connections_after_each_answer();
  // Graceful stop, step one: close the listener; connections finish their current request and
  // are closed instead of kept alive, and idle kept-alive connections are closed.
  void stop_accepting();
  // Waits until no request is being handled or written; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout);
  // Closes every connection and joins the threads. Idempotent.
  void stop();
  std::size_t in_flight() const;
  // For a watchdog: true when the worker pool runs a probe or finishes any task within `timeout`
  // (busy workers that make progress are alive; workers all stuck are not). Blocks the caller.
  bool workers_responsive(std::chrono::milliseconds timeout);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rr::http
