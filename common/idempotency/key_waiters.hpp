// Requests waiting for another request's key to be let go (Prefer: wait=N), keyed by user and
// Idempotency-Key. A waiter is a parked request, held here as the callback that runs it again
// (Resume; the API's is its parked HTTP request's run_again): it holds no thread and no
// database connection. Each one runs again as soon as the key is released, or at its deadline,
// where its re-run answers for itself (a replay, the key taken over, or 409 after all).
// Wake-ups: the process's own runs say when they end (key_released); runs in other processes are
// seen by ONE thread that, only while there are waiters, asks the database about every waited key
// in one query per poll interval, on a pooled connection held for that query only.
// Places are bounded per process and per user, so one user's flood of waits cannot take the
// places every other user's waits need. A place is held by its request from its first wait until
// it is answered, whatever wakes it in between: the bound counts requests that waited, not only
// those parked at this instant.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "common/db/connection_pool.hpp"

namespace rr::idempotency {

// Waiters per process at most: each holds its request (up to the 64 KiB body limit) and its
// connection, so a flood of waits costs at most about 64 MiB.
inline constexpr std::size_t kMaxKeyWaitersPerProcess = 1024;

struct KeyWaitersOptions {
  // Beyond it a request that would wait gets its 409 at once.
  std::size_t max_waiters = kMaxKeyWaitersPerProcess;
  // One user's waiters at most (IDEMPOTENCY_MAX_WAITERS_PER_USER), well under max_waiters: beyond
  // it that user's request is refused while every other user's waits proceed.
  std::size_t max_waiters_per_user = 64;
  std::chrono::milliseconds poll_interval{50};
  // A lock older than this is abandoned (a retry would take it over): its waiters wake.
  std::chrono::milliseconds lock_timeout{60000};
  // How long a poll waits for a pooled connection before it skips its turn.
  std::chrono::milliseconds checkout_timeout{200};
};

// Runs a waiter's request again, once; the request answers for itself from there. Dropped without
// being called (the registry stopped), it is the caller's to answer what it parked.
using Resume = std::function<void()>;

class KeyWaiters {
 public:
  KeyWaiters(db::ConnectionPool& pool, KeyWaitersOptions options);
  // Stops the poller. Waiters still here are dropped (their Resume callbacks act on a stopped
  // server only, which ignores them).
  ~KeyWaiters();
  KeyWaiters(const KeyWaiters&) = delete;
  KeyWaiters& operator=(const KeyWaiters&) = delete;

  // One waiter's place, taken before its request is first deferred (the server parks the request
  // later, on another thread, and a place counted from the start keeps concurrent deferrals from
  // passing either bound). Its request holds it until it is answered: woken while the key is still
  // in flight, it parks again in the same place (add() with it again), so no other request can
  // take the place in between. Given back only when the last holder drops it; it must not outlive
  // the registry (the server drops its parked requests when it stops, before the registry goes).
  class Place {
   public:
    Place(KeyWaiters& owner, std::int64_t user_id) : owner_(owner), user_id_(user_id) {}
    ~Place() { owner_.give_back(user_id_); }
    Place(const Place&) = delete;
    Place& operator=(const Place&) = delete;

   private:
    friend class KeyWaiters;
    KeyWaiters& owner_;
    const std::int64_t user_id_;
  };
  enum class Refusal {
    registry_full,  // max_waiters places are taken
    user_at_share,  // this user holds max_waiters_per_user places
  };

  // A place for one more of this user's waiters, or why there is none. One short lock.
  std::variant<std::shared_ptr<Place>, Refusal> reserve(std::int64_t user_id);
  // `resume` is called once the key is released or at `deadline`, whichever comes first. The
  // waiter is `place`'s user's, and waits in that place: a request woken while the key is still in
  // flight parks again with the place it holds, and is never refused for it.
  void add(const Place& place, const std::string& key, std::chrono::steady_clock::time_point deadline, Resume resume);
  // A run of this key in this process ended (finished, or let go unfinished): its waiters run
  // again now. Cheap when nobody waits.
  void key_released(std::int64_t user_id, const std::string& key);
  // Parked waiters (places held by requests not parked now, reserved or re-running, not counted).
  std::size_t waiting() const;

 private:
  using KeyId = std::pair<std::int64_t, std::string>;
  struct Waiter {
    std::chrono::steady_clock::time_point deadline;
    Resume resume;
  };

  void poll_loop();
  // Of the keys given, those no longer held by a live lock (finished, unlocked, abandoned, gone).
  std::vector<KeyId> released_keys(const std::vector<KeyId>& keys);
  // Takes the waiters of `key` out (under mutex_).
  void take_waiters_of(const KeyId& key, std::vector<Resume>& out);
  // A place dropped by its last holder: one of this user's places is free again.
  void give_back(std::int64_t user_id);

  db::ConnectionPool& pool_;
  const KeyWaitersOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<KeyId, std::vector<Waiter>> waiters_;
  std::size_t count_ = 0;  // parked waiters: the poller works only while there are some
  // Places held (from the first wait until the answer), in all and per user; only users holding
  // places have an entry, so the map is bounded by max_waiters.
  std::size_t places_ = 0;
  std::unordered_map<std::int64_t, std::size_t> places_per_user_;
  bool stopping_ = false;
  std::thread poller_;
};

}  // namespace rr::idempotency
