// Failed authentication bounded per client address: an address that has failed
// AUTH_FAILURES_PER_MINUTE times in its current minute is refused (429 with Retry-After) for the
// rest of it before anything reaches PostgreSQL, so a token guesser costs the database a fixed
// number of lookups a minute however fast it sends.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace rr::auth {

class AuthFailureThrottle {
 public:
  using Clock = std::chrono::steady_clock;

  struct Settings {
    std::size_t failures_per_minute = 20;
    // Addresses remembered at most. When the table is full and none of its windows has ended,
    // every further address shares one window: memory stays bounded, a flood from many addresses
    // is still held to failures_per_minute a minute together, and tokens the cache already knows
    // are never asked about (callers check the throttle only for unproven credentials).
    std::size_t max_addresses = 100000;
  };

  explicit AuthFailureThrottle(Settings settings) : settings_(settings) {}

  // Whole seconds until `address` may try unproven credentials again; nullopt when it may now.
  // A refusal is counted (rocket_rides_auth_throttled_total) and logged once per address and minute.
  std::optional<int> retry_after(const std::string& address, Clock::time_point now = Clock::now());
  // One failed authentication (an unknown token, a failed sign-in) from `address`.
  void record_failure(const std::string& address, Clock::time_point now = Clock::now());

  std::size_t addresses() const;

 private:
  struct Window {
    Clock::time_point start{};
    std::size_t failures = 0;
    bool logged = false;  // this window's throttling has been logged
  };

  Window& window_of(const std::string& address, Clock::time_point now);  // under mutex_
  void forget_ended_windows(Clock::time_point now);                      // under mutex_

  const Settings settings_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Window> windows_;
  Window shared_overflow_;
  Clock::time_point last_sweep_{};
};

}  // namespace rr::auth
