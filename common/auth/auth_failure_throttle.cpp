// Fixed one-minute windows per address, in one table under one lock: a check is a hash lookup,
// and the table is swept of ended windows only when it is full, at most once a second.
#include "common/auth/auth_failure_throttle.hpp"

#include "common/base/log.hpp"
#include "common/metrics/registry.hpp"

namespace rr::auth {
namespace {

constexpr auto kWindow = std::chrono::minutes(1);
constexpr auto kSweepInterval = std::chrono::seconds(1);

}  // namespace

AuthFailureThrottle::Window& AuthFailureThrottle::window_of(const std::string& address, Clock::time_point now) {
  auto found = windows_.find(address);
  Window* window = nullptr;
  if (found != windows_.end()) {
    window = &found->second;
  } else {
    if (windows_.size() >= settings_.max_addresses) forget_ended_windows(now);
    window = windows_.size() < settings_.max_addresses ? &windows_[address] : &shared_overflow_;
  }
  if (now - window->start >= kWindow) *window = Window{now, 0, false};
  return *window;
}

void AuthFailureThrottle::forget_ended_windows(Clock::time_point now) {
  if (now - last_sweep_ < kSweepInterval) return;
  last_sweep_ = now;
  std::erase_if(windows_, [&](const auto& entry) { return now - entry.second.start >= kWindow; });
}

std::optional<int> AuthFailureThrottle::retry_after(const std::string& address, Clock::time_point now) {
  bool log_it = false;
  int seconds = 0;
  {
    std::lock_guard lock(mutex_);
    auto found = windows_.find(address);
    Window* window = found != windows_.end() ? &found->second : nullptr;
    if (!window && windows_.size() >= settings_.max_addresses) window = &shared_overflow_;
    if (!window || now - window->start >= kWindow || window->failures < settings_.failures_per_minute) {
      return std::nullopt;
    }
    auto left = std::chrono::ceil<std::chrono::seconds>(window->start + kWindow - now);
    seconds = static_cast<int>(std::max<std::chrono::seconds::rep>(1, left.count()));
    log_it = !window->logged;
    window->logged = true;
  }
  static auto& throttled = metrics::default_registry().counter(
      "rocket_rides_auth_throttled_total",
      "Requests with unproven credentials refused 429 because their address failed authentication too often.");
  throttled.inc();
  if (log_it) {
    log::warn("authentication failures throttled",
              {{"remote", address}, {"failures_per_minute", static_cast<std::int64_t>(settings_.failures_per_minute)}});
  }
  return seconds;
}

void AuthFailureThrottle::record_failure(const std::string& address, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  ++window_of(address, now).failures;
}

std::size_t AuthFailureThrottle::addresses() const {
  std::lock_guard lock(mutex_);
  return windows_.size();
}

}  // namespace rr::auth
