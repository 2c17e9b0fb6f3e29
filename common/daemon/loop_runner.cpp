// The shared daemon loop: pass, then sleep/wait only when idle, back off after errors.
#include "common/daemon/loop_runner.hpp"

#include <algorithm>
#include <exception>

#include "common/base/log.hpp"
#include "common/daemon/backoff.hpp"
#include "common/daemon/stop_signal.hpp"
#include "common/daemon/systemd_notify.hpp"
#include "common/metrics/registry.hpp"

namespace rr::daemon {

namespace {

using std::chrono::milliseconds;

// Slices a long wait so the watchdog is fed at least twice per period while idle.
milliseconds wait_slice(milliseconds wanted) {
  if (auto interval = watchdog_interval()) {
    auto half = std::chrono::duration_cast<milliseconds>(*interval / 2);
    return std::clamp(half, milliseconds{1}, wanted);
  }
  return wanted;
}

void idle_wait(const LoopOptions& options) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + options.idle_sleep;
  while (!stop_requested()) {
    auto left = std::chrono::ceil<milliseconds>(deadline - clock::now());
    if (left.count() <= 0) return;
    auto slice = wait_slice(left);
    bool woken = options.wait_for_work ? options.wait_for_work(slice) : !sleep_unless_stopped(slice);
    notify_watchdog();
    if (woken) return;
  }
}

void backoff_sleep(const LoopOptions& options, milliseconds delay) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + delay;
  while (!stop_requested()) {
    auto left = std::chrono::ceil<milliseconds>(deadline - clock::now());
    if (left.count() <= 0) return;
    if (!sleep_unless_stopped(wait_slice(left))) return;
    notify_watchdog();
  }
}

}  // namespace

LoopOptions LoopOptions::from_settings(std::string name, const config::LoopSettings& settings) {
  LoopOptions options;
  options.name = std::move(name);
  options.idle_sleep = settings.idle_sleep;
  options.max_backoff = settings.max_backoff;
  options.initial_backoff = std::min(options.initial_backoff, settings.max_backoff);
  return options;
}

LoopStats run_loop(const LoopOptions& options, const std::function<PassOutcome()>& run_once) {
  LoopStats stats;
  Backoff backoff(options.initial_backoff, options.max_backoff);
  bool ready = false;
  const std::string failure_message = options.name + " pass failed";
  // Every daemon gets the same loop metrics, labelled by loop name.
  auto& registry = metrics::default_registry();
  const metrics::Labels loop_label{{"loop", options.name}};
  auto& passes_metric = registry.counter("rocket_rides_loop_passes_total", "Loop passes that completed.", loop_label);
  auto& errors_metric =
      registry.counter("rocket_rides_loop_errors_total", "Loop passes or waits that failed.", loop_label);
  auto& last_success_metric = registry.gauge("rocket_rides_loop_last_success_timestamp_seconds",
                                             "Unix time of the last pass that completed.", loop_label);
  const std::string wait_failure_message = options.name + " wait for work failed";

  while (!stop_requested()) {
    milliseconds delay{0};
    try {
      PassOutcome outcome = run_once();
      ++stats.passes;
      passes_metric.inc();
      last_success_metric.set(
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
      notify_watchdog();
      if (!ready) {
        // Ready means "connected and did a pass", so a unit that starts us can rely on it.
        notify_ready();
        ready = true;
      }
      if (backoff.failures() > 0) {
        log::info(options.name + " recovered", {{"failed_passes", backoff.failures()}});
        notify_status("running");
        backoff.reset();
      }
      if (outcome.did_work) {
        ++stats.busy_passes;
        continue;
      }
    } catch (const std::exception& e) {
      ++stats.failed_passes;
      errors_metric.inc();
      delay = backoff.next();
      log::error(failure_message, {{"loop", options.name}, {"error", e.what()}, {"retry_in", delay}});
      notify_status(failure_message + ": " + e.what());
    }

    if (delay.count() > 0 || backoff.failures() > 0) {
      if (options.on_backoff) options.on_backoff(delay, backoff.failures());
      backoff_sleep(options, delay);
      continue;
    }
    try {
      idle_wait(options);
    } catch (const std::exception& e) {
      // The wake-up channel (a LISTEN connection) is only a hint that work arrived; the pass is the
      // source of truth. So a broken channel degrades to polling every idle_sleep, and the next
      // idle wait tries it again, rather than holding up passes behind a backoff.
      ++stats.failed_waits;
      errors_metric.inc();
      log::error(wait_failure_message,
                 {{"loop", options.name}, {"error", e.what()}, {"fallback_sleep", options.idle_sleep}});
      sleep_unless_stopped(options.idle_sleep);
    }
  }

  log::info(options.name + " stopping",
            {{"passes", stats.passes}, {"failed_passes", stats.failed_passes}, {"failed_waits", stats.failed_waits}});
  notify_stopping();
  return stats;
}

}  // namespace rr::daemon
