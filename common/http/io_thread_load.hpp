// What IoThreadBalance decides from: each I/O thread's CPU time over a period, read from its
// thread CPU clock on the first I/O thread. Every 100 ms while the threads work, every second
// while one thread in use is all but idle, so that an idle server wakes once a second for it, not
// ten times (a load from idle spreads within a second).
#pragma once

#include <time.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "common/http/io_thread_balance.hpp"

namespace rr::http {

class IoThreadLoad {
 public:
  // Runs its timer on `first`, feeds `balance`, and stops sampling once `closing` is set.
  IoThreadLoad(boost::asio::io_context& first, IoThreadBalance& balance, const std::atomic<bool>& closing);

  // On the first I/O thread, once every I/O thread runs. With fewer than two threads, or without
  // their CPU clocks, nothing is sampled and the balance keeps every connection on one thread.
  void start(std::vector<std::thread>& io_threads);

 private:
  void sample();

  boost::asio::steady_timer timer_;
  IoThreadBalance& balance_;
  const std::atomic<bool>& closing_;
  std::vector<clockid_t> clocks_;
  std::vector<double> cpu_seconds_;
  std::chrono::steady_clock::time_point sampled_;
};

}  // namespace rr::http
