// Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter"):
// after the n-th consecutive failure wait uniformly in [0, min(cap, base * 2^(n-1))], so a fleet of
// daemons that failed together does not retry together.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace rr::daemon {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap, std::uint64_t seed = std::random_device{}());

  // Counts one more failure and returns how long to wait before the next attempt.
  std::chrono::milliseconds next();
  // The upper bound next() draws from for the current failure count (0 before any failure).
  std::chrono::milliseconds ceiling() const;
  void reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  std::chrono::milliseconds base_;
  std::chrono::milliseconds cap_;
  int failures_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace rr::daemon
