// Sampling the I/O threads' CPU clocks for the balance.
#include "common/http/io_thread_load.hpp"

#include <pthread.h>

#include <algorithm>

namespace rr::http {
namespace {

constexpr std::chrono::milliseconds kBalancePeriod{100};
constexpr std::chrono::milliseconds kQuietBalancePeriod{1000};
constexpr double kQuietBelow = 0.02;  // of one core, for every thread

}  // namespace

IoThreadLoad::IoThreadLoad(boost::asio::io_context& first, IoThreadBalance& balance, const std::atomic<bool>& closing)
    : timer_(first), balance_(balance), closing_(closing) {}

void IoThreadLoad::start(std::vector<std::thread>& io_threads) {
  if (io_threads.size() < 2) return;
  for (auto& thread : io_threads) {
    clockid_t clock{};
    if (pthread_getcpuclockid(thread.native_handle(), &clock) != 0) return;  // no clocks: stay on one thread
    clocks_.push_back(clock);
  }
  cpu_seconds_.assign(clocks_.size(), 0.0);
  sample();
}

// Each I/O thread's CPU over the period, as a share of one core.
void IoThreadLoad::sample() {
  auto now = std::chrono::steady_clock::now();
  double wall = std::chrono::duration<double>(now - sampled_).count();
  std::vector<double> busy(clocks_.size(), 0.0);
  for (std::size_t i = 0; i < clocks_.size(); ++i) {
    timespec used{};
    if (clock_gettime(clocks_[i], &used) != 0) continue;
    double seconds = static_cast<double>(used.tv_sec) + static_cast<double>(used.tv_nsec) * 1e-9;
    busy[i] = (seconds - cpu_seconds_[i]) / wall;
    cpu_seconds_[i] = seconds;
  }
  // The first sample only sets the baseline.
  bool first = sampled_ == std::chrono::steady_clock::time_point{};
  if (!first) balance_.observe(busy);
  sampled_ = now;
  bool quiet = !first && balance_.active() == 1 &&
               std::all_of(busy.begin(), busy.end(), [](double b) { return b < kQuietBelow; });
  timer_.expires_after(quiet ? kQuietBalancePeriod : kBalancePeriod);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec && !closing_) sample();
  });
}

}  // namespace rr::http
