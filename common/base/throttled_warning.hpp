// A warning that can fire thousands of times a second under attack (every refused connection,
// every shed request) is logged at most once per interval, with how often it happened since the
// last line: the log stays readable and its writes cannot become part of the overload.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace rr::log {

class ThrottledWarning {
 public:
  ThrottledWarning(std::string message, std::chrono::milliseconds interval = std::chrono::seconds(10))
      : message_(std::move(message)), interval_(interval) {}

  // Counts one occurrence; writes the line (with `count`, the occurrences since the previous line,
  // and `limit`, the bound that was hit) when the interval has passed since the previous line.
  // Thread-safe. Returns true when it wrote.
  bool note(std::uint64_t limit);

 private:
  const std::string message_;
  const std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::uint64_t pending_ = 0;
  std::chrono::steady_clock::time_point last_{};
  bool logged_once_ = false;
};

}  // namespace rr::log
