// Draining until a short batch.
#include "common/daemon/drain.hpp"

#include "common/daemon/stop_signal.hpp"

namespace rr::daemon {

std::int64_t drain(const std::function<PassOutcome()>& run_once, std::int64_t max_passes) {
  std::int64_t passes = 0;
  while (passes < max_passes && !stop_requested()) {
    ++passes;
    // Work a pass touched is not selected again (pushed, deleted, finished or rescheduled), so
    // repeating while batches come back full drains the backlog and ends.
    if (!run_once().full_batch) break;
  }
  return passes;
}

}  // namespace rr::daemon
