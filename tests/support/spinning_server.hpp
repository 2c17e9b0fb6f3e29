// A test server of two I/O threads (and one worker) whose in-memory answer, the request's path as
// plain text, costs `spin` of CPU on the I/O thread that gives it and notes that thread: enough
// load on one thread brings the second in (io_thread_balance), and connections move between them.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <set>
#include <thread>

#include "common/http/server.hpp"

namespace rr::test {

class SpinningServer {
 public:
  explicit SpinningServer(std::chrono::microseconds spin);
  SpinningServer(const SpinningServer&) = delete;
  SpinningServer& operator=(const SpinningServer&) = delete;

  http::Server& server() { return server_; }
  // How many I/O threads have answered so far.
  std::size_t threads_seen();

 private:
  std::mutex mutex_;
  std::set<std::thread::id> threads_;
  http::Server server_;
};

}  // namespace rr::test
