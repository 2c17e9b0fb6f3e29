#include "common/http/io_thread_balance.hpp"

#include <algorithm>
#include <numeric>

namespace rr::http {

IoThreadBalance::IoThreadBalance(std::size_t threads)
    : threads_(std::max<std::size_t>(threads, 1)), connections_(new std::atomic<std::size_t>[threads_]) {
  for (std::size_t i = 0; i < threads_; ++i) connections_[i].store(0);
}

std::size_t IoThreadBalance::connections(std::size_t thread) const {
  return connections_[thread].load(std::memory_order_relaxed);
}

std::size_t IoThreadBalance::placement() const {
  std::size_t best = 0;
  std::size_t in_use = std::min(active(), threads_);
  for (std::size_t i = 1; i < in_use; ++i) {
    if (connections(i) < connections(best)) best = i;
  }
  return best;
}

void IoThreadBalance::placed(std::size_t thread) { connections_[thread].fetch_add(1, std::memory_order_relaxed); }

std::optional<std::size_t> IoThreadBalance::target_for(std::size_t thread) const {
  if (threads_ == 1) return std::nullopt;  // the usual single-thread server: one load, no loop
  std::size_t emptiest = placement();
  if (thread >= active()) return emptiest;
  // Two or more apart: a move of one then narrows the gap instead of swapping it round.
  if (connections(thread) >= connections(emptiest) + 2) return emptiest;
  return std::nullopt;
}

void IoThreadBalance::moved(std::size_t from, std::size_t to) {
  connections_[to].fetch_add(1, std::memory_order_relaxed);
  connections_[from].fetch_sub(1, std::memory_order_relaxed);
}

void IoThreadBalance::closed(std::size_t thread) { connections_[thread].fetch_sub(1, std::memory_order_relaxed); }

void IoThreadBalance::observe(const std::vector<double>& busy) {
  std::size_t in_use = active();
  std::size_t counted = std::min(busy.size(), threads_);
  double in_use_load =
      std::accumulate(busy.begin(), busy.begin() + static_cast<std::ptrdiff_t>(std::min(in_use, counted)), 0.0);
  // Threads out of use still serve their connections until each one's next request moves it.
  double total_load = std::accumulate(busy.begin(), busy.begin() + static_cast<std::ptrdiff_t>(counted), 0.0);
  if (in_use < threads_ && in_use_load / static_cast<double>(in_use) > kSpreadAbove) {
    active_.store(in_use + 1, std::memory_order_relaxed);
  } else if (in_use > 1 && total_load <= kGatherAtMost * static_cast<double>(in_use - 1)) {
    active_.store(in_use - 1, std::memory_order_relaxed);
  }
}

}  // namespace rr::http
