// The debounced wake-up: a flag the stagers set, and one thread that turns it into NOTIFYs.
#include "common/jobs/enqueuer_wakeup.hpp"

#include <memory>
#include <pqxx/pqxx>

#include "common/base/log.hpp"
#include "common/daemon/backoff.hpp"
#include "common/db/one_trip_call.hpp"
#include "common/metrics/registry.hpp"

namespace rr::jobs {
namespace {

// The channel the enqueuer LISTENs on (staged_jobs_listener.cpp); the payload is empty, a
// notification only means "look at the table". One round trip that leaves nothing in the session
// (db::run_one_trip): the NOTIFY commits in the call's own implicit transaction.
const db::Call kNotify = db::call("pg_notify", "staged_jobs", "");

metrics::Counter& notifies_counter() {
  static auto& counter = metrics::default_registry().counter(
      "rocket_rides_enqueuer_wakeup_notifies_total",
      "NOTIFY staged_jobs sent after commits that staged jobs (at most one per ENQUEUER_WAKEUP_DEBOUNCE).");
  return counter;
}

metrics::Counter& failures_counter() {
  static auto& counter = metrics::default_registry().counter(
      "rocket_rides_enqueuer_wakeup_failures_total",
      "Failed attempts to connect or send the enqueuer's wake-up; the enqueuer's poll delivers meanwhile.");
  return counter;
}

}  // namespace

EnqueuerWakeupSettings EnqueuerWakeupSettings::from_env(const config::Environment& env) {
  EnqueuerWakeupSettings settings;
  settings.debounce =
      env.seconds("ENQUEUER_WAKEUP_DEBOUNCE", static_cast<double>(kDefaultWakeupDebounce.count()) / 1000.0, 0, 1);
  return settings;
}

std::unique_ptr<EnqueuerWakeup> make_enqueuer_wakeup(const EnqueuerWakeupSettings& settings, std::string database_url) {
  if (!settings.enabled()) return nullptr;
  EnqueuerWakeup::Options options;
  options.database_url = std::move(database_url);
  options.debounce = settings.debounce;
  return std::make_unique<EnqueuerWakeup>(std::move(options));
}

EnqueuerWakeup::EnqueuerWakeup(Options options) : options_(std::move(options)) {
  notifies_counter();  // the series shows 0 from the start, not only after the first NOTIFY
  failures_counter();
  thread_ = std::thread([this] { run(); });
}

EnqueuerWakeup::~EnqueuerWakeup() {
  {
    // Under the sleep's mutex, so the thread cannot miss it between its check and its wait.
    std::lock_guard lock(sleep_mutex_);
    state_.fetch_or(kStopping);
  }
  sleep_.notify_all();
  state_.notify_all();
  thread_.join();
}

void EnqueuerWakeup::jobs_staged() noexcept {
  // Under load the flag is nearly always set already: a plain load, no write to the shared line.
  if (state_.load(std::memory_order_relaxed) & kPending) return;
  if ((state_.fetch_or(kPending) & kPending) == 0) state_.notify_one();
}

bool EnqueuerWakeup::sleep_unless_stopping(std::chrono::milliseconds duration) {
  std::unique_lock lock(sleep_mutex_);
  return sleep_.wait_for(lock, duration, [this] { return stopping(); });
}

void EnqueuerWakeup::run() {
  std::unique_ptr<db::Connection> connection;
  daemon::Backoff backoff(options_.min_backoff, options_.max_backoff);
  bool failing = false;
  auto send = [&] {
    if (!connection) connection = std::make_unique<db::Connection>(options_.database_url);
    db::run_one_trip(*connection, kNotify, options_.statement_timeout);
    ++notifies_sent_;
    notifies_counter().inc();
  };
  try {
    connection = std::make_unique<db::Connection>(options_.database_url);
  } catch (const std::exception&) {
    // Left to the first wake-up, which retries, logs and backs off like any other failure.
  }
  for (;;) {
    // Idle until a staging or the stop: a futex wait, no timer ticking while nothing happens.
    std::uint32_t state = state_.load();
    while (state == 0) {
      state_.wait(0);
      state = state_.load();
    }
    if (state & kStopping) break;
    // Taken before the NOTIFY leaves, so that a staging committed while it is on its way sets the
    // flag again and gets the trailing NOTIFY after the interval. The stager committed before it
    // set the flag, so this NOTIFY commits after the rows it announces.
    state_.fetch_and(~kPending);
    try {
      send();
      if (failing) log::info("enqueuer wake-up works again");
      failing = false;
      backoff.reset();
      // At most one NOTIFY per interval: stagings meanwhile only set the flag.
      if (sleep_unless_stopping(options_.debounce)) break;
    } catch (const std::exception& e) {
      connection.reset();         // a fresh session next time (the server may have ended this one)
      state_.fetch_or(kPending);  // the jobs it was for still want their wake-up
      failures_counter().inc();
      if (!failing) {
        log::warn("enqueuer wake-up failed: staged jobs wait for the enqueuer's poll until it works again",
                  {{"error", e.what()}});
      }
      failing = true;
      if (sleep_unless_stopping(backoff.next())) break;
    }
  }
  // Jobs staged since the last NOTIFY get one more, on a live connection only: connecting now
  // could hold up the stop, and the enqueuer's poll finds them anyway.
  if ((state_.load() & kPending) && connection && !failing) {
    try {
      send();
    } catch (const std::exception&) {
    }
  }
}

}  // namespace rr::jobs
