// The loop every background daemon runs around its run_once(): sleep only when idle (or wait for a
// wake-up), back off with jitter after errors, feed the systemd watchdog, stop gracefully.
// It knows nothing of what a pass does.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/config/settings.hpp"

namespace rr::daemon {

// What a pass tells the loop: did it find work? A pass that did work is repeated at once, since
// more may be waiting; an idle pass is followed by a sleep or a wait for a wake-up.
// `full_batch` is what `--once` drains by (daemon_main.hpp): a batch that came back full may have
// left more behind, a short one means nothing eligible is left.
struct PassOutcome {
  bool did_work = false;
  bool full_batch = false;
};

struct LoopOptions {
  std::string name;  // names the loop in log lines ("enqueuer")
  std::chrono::milliseconds idle_sleep{5000};
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{30000};
  // Optional wake-up (LISTEN/NOTIFY, a socket): waits at most `timeout` for a sign of new work,
  // returns true when woken early, false on timeout. It should return early on a stop request
  // (wait_readable_unless_stopped does). Without it the loop sleeps idle_sleep. If it throws, the
  // loop logs it and sleeps idle_sleep instead (the next idle wait calls it again to reconnect).
  std::function<bool(std::chrono::milliseconds timeout)> wait_for_work;
  // Called before each backoff sleep with the delay and the count of consecutive failures; for
  // metrics and tests.
  std::function<void(std::chrono::milliseconds delay, int consecutive_failures)> on_backoff;

  static LoopOptions from_settings(std::string name, const config::LoopSettings& settings);
};

struct LoopStats {
  std::uint64_t passes = 0;         // passes that returned (with or without work)
  std::uint64_t busy_passes = 0;    // of which did work
  std::uint64_t failed_passes = 0;  // passes that threw
  std::uint64_t failed_waits = 0;   // wait_for_work calls that threw
};

// Repeats `run_once` until a stop is requested (stop_signal.hpp), then returns after the pass in
// hand. Tells systemd READY after the first successful pass and STOPPING on the way out; pings
// the watchdog every pass and during long idle waits. An exception from a pass is logged as one
// line (level=error, msg "<name> pass failed", error=what) and followed by a backoff sleep.
LoopStats run_loop(const LoopOptions& options, const std::function<PassOutcome()>& run_once);

}  // namespace rr::daemon
