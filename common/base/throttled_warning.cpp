// Once-per-interval warnings with a count.
#include "common/base/throttled_warning.hpp"

#include "common/base/log.hpp"

namespace rr::log {

bool ThrottledWarning::note(std::uint64_t limit) {
  std::uint64_t count = 0;
  {
    std::lock_guard lock(mutex_);
    ++pending_;
    auto now = std::chrono::steady_clock::now();
    if (logged_once_ && now - last_ < interval_) return false;
    logged_once_ = true;
    last_ = now;
    count = pending_;
    pending_ = 0;
  }
  // Written outside the lock: the log's own lock is enough to keep lines whole.
  warn(message_, {{"count", count},
                  {"limit", limit},
                  {"interval_s", std::chrono::duration_cast<std::chrono::seconds>(interval_).count()}});
  return true;
}

}  // namespace rr::log
