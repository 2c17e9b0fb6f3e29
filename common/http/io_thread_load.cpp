// Sampling how much of a core each I/O thread wanted, for the balance.
#include "common/http/io_thread_load.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>

#include "common/http/thread_demand.hpp"

namespace rr::http {
namespace {

constexpr std::chrono::milliseconds kBalancePeriod{100};
constexpr std::chrono::milliseconds kQuietBalancePeriod{1000};
constexpr double kQuietBelow = 0.02;  // of one core, for every thread

}  // namespace

IoThreadLoad::IoThreadLoad(boost::asio::io_context& first, IoThreadBalance& balance, const std::atomic<bool>& closing)
    : timer_(first),
      balance_(balance),
      closing_(closing),
      tids_(std::make_unique<std::atomic<pid_t>[]>(balance.threads())) {}

void IoThreadLoad::thread_started(std::size_t index) {
  if (index < balance_.threads()) tids_[index].store(::gettid(), std::memory_order_release);
}

void IoThreadLoad::start(std::vector<std::thread>& io_threads) {
  if (io_threads.size() < 2) return;
  for (auto& thread : io_threads) {
    clockid_t clock{};
    if (pthread_getcpuclockid(thread.native_handle(), &clock) != 0) return;  // no clocks: stay on one thread
    clocks_.push_back(clock);
  }
  demanded_seconds_.assign(clocks_.size(), 0.0);
  with_waits_.assign(clocks_.size(), false);
  sample();
}

std::pair<double, bool> IoThreadLoad::demanded(std::size_t index) const {
  pid_t tid = index < balance_.threads() ? tids_[index].load(std::memory_order_acquire) : 0;
  if (tid != 0) {
    if (auto demand = read_thread_demand(tid)) return {demand->ran_seconds + demand->waited_seconds, true};
  }
  timespec used{};
  if (clock_gettime(clocks_[index], &used) != 0) return {0.0, false};
  return {static_cast<double>(used.tv_sec) + static_cast<double>(used.tv_nsec) * 1e-9, false};
}

// Each I/O thread's demand over the period, as a share of one core.
void IoThreadLoad::sample() {
  auto now = std::chrono::steady_clock::now();
  double wall = std::chrono::duration<double>(now - sampled_).count();
  bool first = sampled_ == std::chrono::steady_clock::time_point{};
  std::vector<double> busy(clocks_.size(), 0.0);
  for (std::size_t i = 0; i < clocks_.size(); ++i) {
    auto [seconds, with_waits] = demanded(i);
    // A reading of another kind than the last (the thread's id came after the first samples)
    // only sets the baseline.
    if (!first && with_waits == with_waits_[i]) busy[i] = (seconds - demanded_seconds_[i]) / wall;
    demanded_seconds_[i] = seconds;
    with_waits_[i] = with_waits;
  }
  // The first sample only sets the baseline.
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
