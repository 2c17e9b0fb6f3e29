// A bounded, short-lived, thread-safe memory from a text key to a value, the one eviction policy
// of the process's caches (tokens to users, finished keys to their responses): an entry lives at
// most `ttl`, and at most `capacity` are kept, the oldest first out. A capacity or ttl of 0
// remembers nothing. A miss costs the caller what the cache saves (a database round trip), never
// a wrong answer, so entries must only ever repeat what the source would say within `ttl`.
//
// Renewal ahead of expiry (find_for_renewal): once an entry is in the last `renew_within` of its
// life, exactly one caller is told to renew it while every other caller keeps getting the value.
// Without it, an entry that expires under load sends every request that arrives before the first
// new lookup returns to the source of its own (a benchmark counted 19 token lookups in 10 s where
// 5 would do). A renewal is a new lookup remembered afresh, so an entry still lives at most `ttl`
// from the lookup that made it.
//
// One load at a time per key (load_shared): callers that miss the same key while another caller
// is loading it wait for that caller's answer instead of asking the source too, so a cold cache
// under load (an API just started, 32 connections sending the same token) costs one lookup.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace rr::base {

template <typename Value>
class TtlCache {
 public:
  TtlCache(std::size_t capacity, std::chrono::milliseconds ttl) : capacity_(capacity), ttl_(ttl) {}

  std::optional<Value> find(const std::string& key) {
    if (capacity_ == 0) return std::nullopt;
    std::lock_guard lock(mutex_);
    auto* entry = live_entry_locked(key, Clock::now());
    if (!entry) return std::nullopt;
    return entry->value;
  }

  struct Renewal {
    Value value;
    bool renew;  // this caller, and no other, is to look the value up again and remember it
  };
  // find(), and for the first caller to see the entry within `renew_within` of its expiry,
  // renew = true. An entry that expires unrenewed (the renewal failed) is a miss again.
  std::optional<Renewal> find_for_renewal(const std::string& key, std::chrono::milliseconds renew_within) {
    if (capacity_ == 0) return std::nullopt;
    auto now = Clock::now();
    std::lock_guard lock(mutex_);
    auto* entry = live_entry_locked(key, now);
    if (!entry) return std::nullopt;
    bool renew = !entry->renewal_claimed && entry->expires - now <= renew_within;
    if (renew) entry->renewal_claimed = true;
    return Renewal{entry->value, renew};
  }

  // Drops `key` now (its source said it no longer holds).
  void forget(const std::string& key) {
    std::lock_guard lock(mutex_);
    entries_.erase(key);
  }

  std::chrono::milliseconds ttl() const { return ttl_; }

  void remember(std::string key, Value value) {
    if (capacity_ == 0 || ttl_.count() <= 0) return;
    std::lock_guard lock(mutex_);
    remember_locked(std::move(key), std::move(value));
  }

  // `load()` (the source's answer: a value, or nullopt for none), remembered or, for none,
  // forgotten, and returned; a live entry (not claimed for renewal) is returned instead. While
  // one caller loads a key, others calling load_shared for it wait (blocking their thread: never
  // call it on a request fiber) and get the same answer. If the load throws, the exception
  // reaches its own caller only; the waiters then load for themselves.
  template <typename Load>
  std::optional<Value> load_shared(const std::string& key, Load&& load) {
    std::shared_ptr<Flight> flight;
    {
      std::unique_lock lock(mutex_);
      // Loaded since this caller missed (a load that landed meanwhile): that answer will do. An
      // entry claimed for renewal is the claimant's to load.
      if (auto* entry = live_entry_locked(key, Clock::now()); entry && !entry->renewal_claimed) return entry->value;
      auto [it, first] = flights_.try_emplace(key);
      if (first) {
        it->second = std::make_shared<Flight>();
        flight = it->second;
      } else {
        auto joined = it->second;
        joined->done_cv.wait(lock, [&] { return joined->done; });
        if (joined->answered) return joined->answer;
      }
    }
    std::optional<Value> answer;
    if (!flight) {  // the load we waited for failed: ours, alone
      answer = load();
      settle(key, answer);
      return answer;
    }
    try {
      answer = load();
    } catch (...) {
      land(key, *flight, std::nullopt, false);
      throw;
    }
    settle(key, answer);
    land(key, *flight, answer, true);
    return answer;
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    Value value;
    Clock::time_point expires;
    bool renewal_claimed = false;
  };
  // A load in progress, and its answer for those waiting on it.
  struct Flight {
    std::condition_variable done_cv;
    bool done = false;
    bool answered = false;  // false: the load threw
    std::optional<Value> answer;
  };

  // The entry for `key` while it lives (the mutex held); one found expired is erased. Its slot in
  // insertion_order_ goes when the bound reaches it; an erased key is skipped then.
  Entry* live_entry_locked(const std::string& key, Clock::time_point now) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    if (it->second.expires <= now) {
      entries_.erase(it);
      return nullptr;
    }
    return &it->second;
  }

  void remember_locked(std::string key, Value value) {
    auto expires = Clock::now() + ttl_;
    auto [it, inserted] = entries_.insert_or_assign(key, Entry{std::move(value), expires, false});
    if (!inserted) return;  // already queued for the bound
    insertion_order_.push_back(std::move(key));
    // The queue may hold keys already erased by expiry; it never exceeds twice the capacity.
    while (entries_.size() > capacity_ || insertion_order_.size() > 2 * capacity_) {
      entries_.erase(insertion_order_.front());
      insertion_order_.pop_front();
    }
  }

  // The source's answer kept: a value remembered, none forgotten.
  void settle(const std::string& key, const std::optional<Value>& answer) {
    if (answer) {
      remember(key, *answer);
    } else {
      forget(key);
    }
  }

  // Ends the load of `key`: its waiters get `answer` (or load for themselves when not answered).
  void land(const std::string& key, Flight& flight, std::optional<Value> answer, bool answered) {
    {
      std::lock_guard lock(mutex_);
      flight.answer = std::move(answer);
      flight.answered = answered;
      flight.done = true;
      flights_.erase(key);
    }
    flight.done_cv.notify_all();
  }

  std::size_t capacity_;
  std::chrono::milliseconds ttl_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::deque<std::string> insertion_order_;                           // for the size bound: the oldest entry goes first
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;  // loads in progress, by key
};

}  // namespace rr::base
