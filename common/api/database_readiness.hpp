// Whether the database answers, as /readyz reports it: a thread of its own pings it once a
// second on a connection of its own, so readiness never waits for the request pool, and a busy
// API is not mistaken for one that cannot serve (a balancer that took every busy API out would
// turn overload into a total outage).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace rr::api {

class DatabaseReadiness {
 public:
  // Pings `url` every `interval`; the database counts as reachable while the last successful
  // ping is at most `stale_after` old.
  DatabaseReadiness(std::string url, std::chrono::milliseconds interval, std::chrono::milliseconds stale_after);
  ~DatabaseReadiness();
  DatabaseReadiness(const DatabaseReadiness&) = delete;
  DatabaseReadiness& operator=(const DatabaseReadiness&) = delete;

  // Before the first ping has finished, waits for it (at most `stale_after`): a process that just
  // started is neither ready nor unready until it has asked.
  bool database_reachable() const;

 private:
  void run();

  std::string url_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds stale_after_;
  std::atomic<std::int64_t> last_success_ms_{-1};  // steady clock; -1: never
  mutable std::mutex mutex_;
  std::condition_variable wake_;                  // the thread's sleep, cut short by the destructor
  mutable std::condition_variable first_answer_;  // the first ping has finished, either way
  bool stopping_ = false;
  bool answered_once_ = false;
  std::thread thread_;
};

}  // namespace rr::api
