// Draining: what `--once` does for every daemon, and Enqueuer::drain for its tests.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>

#include "common/daemon/loop_runner.hpp"

namespace rr::daemon {

// Repeats `run_once` while its batches come back full (PassOutcome::full_batch), until a stop is
// requested or `max_passes` ran; returns the passes made. An exception from a pass propagates.
std::int64_t drain(const std::function<PassOutcome()>& run_once,
                   std::int64_t max_passes = std::numeric_limits<std::int64_t>::max());

}  // namespace rr::daemon
