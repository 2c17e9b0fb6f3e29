// Requests waiting for another request's key to be let go (Prefer: wait=N), keyed by user and
// Idempotency-Key. A waiter is a parked request (http::Continuation): it holds no thread and no
// database connection. Each one runs again as soon as the key is released, or at its deadline,
// where its re-run answers for itself (a replay, the key taken over, or 409 after all).
// Wake-ups: the process's own runs say when they end (key_released); runs in other processes are
// seen by ONE thread that, only while there are waiters, asks the database about every waited key
// in one query per poll interval, on a pooled connection held for that query only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/db/connection_pool.hpp"
#include "common/http/message.hpp"

namespace rr::idempotency {

struct KeyWaitersOptions {
  // Waiters per process at most (each holds its request, up to the body limit): beyond it a
  // request that would wait gets its 409 at once. Checked before deferring, so concurrent
  // deferrals may pass it by a few.
  std::size_t max_waiters = 1024;
  std::chrono::milliseconds poll_interval{50};
  // A lock older than this is abandoned (a retry would take it over): its waiters wake.
  std::chrono::milliseconds lock_timeout{60000};
  // How long a poll waits for a pooled connection before it skips its turn.
  std::chrono::milliseconds checkout_timeout{200};
};

class KeyWaiters {
 public:
  KeyWaiters(db::ConnectionPool& pool, KeyWaitersOptions options);
  // Stops the poller. Waiters still here are dropped (their continuations act on a stopped server
  // only, which ignores them).
  ~KeyWaiters();
  KeyWaiters(const KeyWaiters&) = delete;
  KeyWaiters& operator=(const KeyWaiters&) = delete;

  // False when max_waiters are waiting already.
  bool has_room() const;
  // `continuation` runs again once the key is released or at `deadline`, whichever comes first.
  void add(std::int64_t user_id, const std::string& key, std::chrono::steady_clock::time_point deadline,
           std::shared_ptr<http::Continuation> continuation);
  // A run of this key in this process ended (finished, or let go unfinished): its waiters run
  // again now. Cheap when nobody waits.
  void key_released(std::int64_t user_id, const std::string& key);
  std::size_t waiting() const;

 private:
  using KeyId = std::pair<std::int64_t, std::string>;
  struct Waiter {
    std::chrono::steady_clock::time_point deadline;
    std::shared_ptr<http::Continuation> continuation;
  };

  void poll_loop();
  // Of the keys given, those no longer held by a live lock (finished, unlocked, abandoned, gone).
  std::vector<KeyId> released_keys(const std::vector<KeyId>& keys);
  // Takes the waiters of `key` out (under mutex_).
  void take_waiters_of(const KeyId& key, std::vector<std::shared_ptr<http::Continuation>>& out);

  db::ConnectionPool& pool_;
  const KeyWaitersOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<KeyId, std::vector<Waiter>> waiters_;
  std::size_t count_ = 0;
  bool stopping_ = false;
  std::thread poller_;
};

}  // namespace rr::idempotency
