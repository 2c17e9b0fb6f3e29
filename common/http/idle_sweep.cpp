#include "common/http/idle_sweep.hpp"

#include <algorithm>
#include <utility>

namespace rr::http {

namespace {
constexpr std::size_t kOutside = std::numeric_limits<std::size_t>::max();
}

IdleSweep::IdleSweep(boost::asio::io_context& context, std::chrono::milliseconds period)
    : timer_(context), period_(period) {}

void IdleSweep::add(IdleWaiter& waiter, std::chrono::steady_clock::time_point deadline) {
  waiter.idle_deadline_ = deadline;
  if (waiter.idle_slot_ == kOutside) {
    waiter.idle_slot_ = waiters_.size();
    waiters_.push_back(&waiter);
  }
  if (!running_) schedule();
}

void IdleSweep::remove(IdleWaiter& waiter) {
  std::size_t slot = std::exchange(waiter.idle_slot_, kOutside);
  if (slot == kOutside) return;
  // The last one takes the freed slot: O(1), and order does not matter.
  IdleWaiter* last = waiters_.back();
  waiters_.pop_back();
  if (last != &waiter) {
    waiters_[slot] = last;
    last->idle_slot_ = slot;
  }
}

void IdleSweep::schedule() {
  running_ = true;
  timer_.expires_after(period_);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) {
      running_ = false;
      return;
    }
    sweep();
  });
}

void IdleSweep::sweep() {
  auto now = std::chrono::steady_clock::now();
  passed_.clear();
  for (IdleWaiter* waiter : waiters_) {
    if (waiter->idle_deadline_ <= now) passed_.push_back(waiter);
  }
  // Out of the sweep before they are told: telling one may end its wait, or begin another.
  for (IdleWaiter* waiter : passed_) remove(*waiter);
  for (IdleWaiter* waiter : passed_) waiter->idle_deadline_passed();
  if (waiters_.empty()) {
    running_ = false;
    return;
  }
  schedule();
}

std::chrono::milliseconds idle_sweep_period(std::chrono::milliseconds read_timeout,
                                            std::chrono::milliseconds idle_timeout) {
  auto shorter = std::min(read_timeout, idle_timeout);
  return std::clamp(shorter / 8, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

}  // namespace rr::http
