// The spinning test server: an in-memory lane that burns CPU on the I/O thread.
#include "support/spinning_server.hpp"

#include "support/plain_text.hpp"

namespace rr::test {
namespace {

http::ServerOptions two_io_threads() {
  http::ServerOptions options;
  options.io_threads = 2;
  options.worker_threads = 1;
  return options;
}

}  // namespace

SpinningServer::SpinningServer(std::chrono::microseconds spin)
    : server_(
          two_io_threads(), [](const http::Request&) { return http::Response{}; },
          http::Triage([this, spin](http::Request& request) {
            auto until = std::chrono::steady_clock::now() + spin;
            while (std::chrono::steady_clock::now() < until) {
            }
            {
              std::lock_guard lock(mutex_);
              threads_.insert(std::this_thread::get_id());
            }
            return http::Dispatch{plain_text(request.path), http::Lane::workers};
          })) {
  server_.start();
}

std::size_t SpinningServer::threads_seen() {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

}  // namespace rr::test
