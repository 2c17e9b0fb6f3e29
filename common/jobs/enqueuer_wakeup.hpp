// Wakes the enqueuer after commits that staged jobs, in place of the per-commit trigger that
// migration 007 dropped: a transaction that NOTIFYs takes a database-wide lock while it commits, so
// every staging commit used to queue behind the one before it. Stagers call jobs_staged() after
// their commit (no I/O, never blocks); a thread of its own sends `SELECT * FROM pg_notify('staged_jobs',
// '')` on one connection, at most once per debounce interval.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/config/environment.hpp"

namespace rr::jobs {

// The enqueuer's wake-up latency target is p99 < 100 ms from commit to push. A job staged just
// after a NOTIFY waits at most one interval for the next one, and the enqueuer's pass (claim, push,
// delete: a few milliseconds) comes on top, so 20 ms spends a fifth of the budget while capping an
// API at 50 NOTIFYs a second, where the trigger sent one per staging commit (about 1,000 a second
// under the benchmark's load).
inline constexpr std::chrono::milliseconds kDefaultWakeupDebounce{20};

struct EnqueuerWakeupSettings {
  // ENQUEUER_WAKEUP_DEBOUNCE seconds, default 0.02, at most 1; 0 turns the wake-up off (no
  // connection, and staged jobs wait for the enqueuer's poll, ENQUEUER_IDLE_SLEEP).
  std::chrono::milliseconds debounce = kDefaultWakeupDebounce;
  bool enabled() const { return debounce.count() > 0; }
  static EnqueuerWakeupSettings from_env(const config::Environment& env);
};

class EnqueuerWakeup {
 public:
  struct Options {
    // A connection of the product's own (DATABASE_URL): the NOTIFY is one autocommit statement
    // that keeps nothing in the session, so a transaction-pooling PgBouncer in between is fine.
    std::string database_url;
    std::chrono::milliseconds debounce = kDefaultWakeupDebounce;
    // Bounds each NOTIFY statement (SET LOCAL in the same round trip), so a stuck server holds
    // up neither the wake-ups for long nor the process's stop.
    std::chrono::milliseconds statement_timeout{5000};
    // After a failure: the first retry, doubled on each further failure up to the cap.
    std::chrono::milliseconds min_backoff{100};
    std::chrono::milliseconds max_backoff{5000};
  };

  // Starts the thread, which connects at once so that the first wake-up pays no connect.
  explicit EnqueuerWakeup(Options options);
  // Stops the thread; jobs staged since the last NOTIFY get a last one if the connection is up.
  ~EnqueuerWakeup();
  EnqueuerWakeup(const EnqueuerWakeup&) = delete;
  EnqueuerWakeup& operator=(const EnqueuerWakeup&) = delete;

  // Call after a commit that staged jobs. The first call after a quiet period gets a NOTIFY at
  // once; calls while one is being sent or within the interval after it share one NOTIFY at the
  // interval's end. An atomic flag and, when it flips, a futex wake: thread-safe, never blocks.
  void jobs_staged() noexcept;

  // NOTIFYs sent by this instance (also counted in rocket_rides_enqueuer_wakeup_notifies_total).
  std::uint64_t notifies_sent() const { return notifies_sent_.load(); }

 private:
  void run();
  // Sleeps `duration` unless the destructor wants the thread back first; true when stopping.
  bool sleep_unless_stopping(std::chrono::milliseconds duration);
  bool stopping() const { return (state_.load() & kStopping) != 0; }

  static constexpr std::uint32_t kPending = 1;   // jobs were staged since the last NOTIFY left
  static constexpr std::uint32_t kStopping = 2;  // the destructor runs

  Options options_;
  std::atomic<std::uint32_t> state_{0};
  std::atomic<std::uint64_t> notifies_sent_{0};
  std::mutex sleep_mutex_;  // only for the thread's timed sleeps, which the destructor cuts short
  std::condition_variable sleep_;
  std::thread thread_;
};

// The wake-up of a process that stages jobs, on its own DATABASE_URL (through PgBouncer too), or
// null when the settings turn it off.
std::unique_ptr<EnqueuerWakeup> make_enqueuer_wakeup(const EnqueuerWakeupSettings& settings, std::string database_url);

}  // namespace rr::jobs
