// What IoThreadBalance decides from: how much of a core each I/O thread wanted over a period, the
// CPU it ran and the time it waited runnable for a core (thread_demand.hpp), read on the first I/O
// thread; where the kernel keeps no schedstat, the thread's CPU clock alone. Every 100 ms while the
// threads work, every second while one thread in use is all but idle, so that an idle server wakes
// once a second for it, not ten times (a load from idle spreads within a second).
#pragma once

#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "common/http/io_thread_balance.hpp"

namespace rr::http {

class IoThreadLoad {
 public:
  // Runs its timer on `first`, feeds `balance`, and stops sampling once `closing` is set.
  IoThreadLoad(boost::asio::io_context& first, IoThreadBalance& balance, const std::atomic<bool>& closing);

  // On I/O thread `index` itself, before it runs anything: notes the kernel's id for its schedstat.
  void thread_started(std::size_t index);

  // On the first I/O thread, once every I/O thread runs. With fewer than two threads, or without
  // their CPU clocks, nothing is sampled and the balance keeps every connection on one thread.
  void start(std::vector<std::thread>& io_threads);

 private:
  void sample();
  // Seconds thread `index` has wanted a core so far, and whether its waits are in them.
  std::pair<double, bool> demanded(std::size_t index) const;

  boost::asio::steady_timer timer_;
  IoThreadBalance& balance_;
  const std::atomic<bool>& closing_;
  std::unique_ptr<std::atomic<pid_t>[]> tids_;  // 0 until the thread has started
  std::vector<clockid_t> clocks_;
  std::vector<double> demanded_seconds_;  // at the last sample
  std::vector<bool> with_waits_;          // whether that reading counted waits
  std::chrono::steady_clock::time_point sampled_;
};

}  // namespace rr::http
