// A kept connection of http::Client and where it runs: a blocking call's own io_context, run on
// the calling thread, or a request fiber's I/O thread, where the fiber suspends while the exchange
// runs and the thread serves others (common/fiber/fiber.hpp). Internal to http::Client.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <string>

#include "common/http/client.hpp"
#include "common/http/client_exchange.hpp"

namespace rr::http {

struct Client::Session {
  // For a blocking caller: the connection lives on an io_context of its own.
  Session(std::string origin, bool tls);
  // For request fibers of one I/O thread: the connection lives on that thread's executor, so only
  // fibers of the same io_context may use it (see home).
  Session(std::string origin, bool tls, boost::asio::any_io_executor fiber_executor);

  // Runs one request within `timeout`; every step is cancelled at the deadline. Throws
  // TransportError (timed_out() for the deadline). A fiber session only on a fiber of its home.
  ClientResponse run(const detail::Url& url, const detail::OutgoingRequest& request, const std::string& what,
                     std::chrono::milliseconds timeout, detail::ExchangeState& state);

  std::string origin;
  std::unique_ptr<boost::asio::io_context> own_context;  // blocking sessions; declared before the
                                                         // connection, which must die first
  boost::asio::any_io_executor executor;
  boost::asio::execution_context* home = nullptr;  // the fibers' io_context; null when blocking
  detail::Connection connection;
  bool used = false;  // carried a request already: the server may have closed it since
  std::chrono::steady_clock::time_point idle_since;

 private:
  // The timer's handler may already be queued when the exchange ends; the shared flags let it see
  // that and leave this session (maybe carrying the next request by then) alone.
  struct Deadline {
    bool finished = false;
    bool passed = false;
  };
  ClientResponse finish_on_fiber(ClientResponse response, std::exception_ptr failure, Deadline& deadline,
                                 boost::asio::steady_timer& timer, const std::string& what,
                                 std::chrono::milliseconds timeout, detail::ExchangeState& state);
  ClientResponse run_blocking(const detail::Url& url, const detail::OutgoingRequest& request, const std::string& what,
                              std::chrono::milliseconds timeout, detail::ExchangeState& state);
  ClientResponse run_on_fiber(const detail::Url& url, const detail::OutgoingRequest& request, const std::string& what,
                              std::chrono::milliseconds timeout, detail::ExchangeState& state);
};

}  // namespace rr::http
