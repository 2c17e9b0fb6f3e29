// The waiters' registry and its one poller thread.
#include "common/idempotency/key_waiters.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <algorithm>
#include <stdexcept>

#include "common/base/log.hpp"
#include "common/base/throttled_warning.hpp"
#include "common/db/sql_seconds.hpp"
#include "common/db/statements.hpp"
#include "common/db/transaction.hpp"

namespace rr::idempotency {
namespace {

// Every waited key in one statement: those NOT still held by a live lock come back (finished,
// unlocked at a recovery point, abandoned past the lock timeout, or gone with a rolled-back
// creation). Reads the unique index once per key; writes nothing.
//   $1 [{"user_id":..,"idempotency_key":..}, ...] (jsonb)  $2 lock timeout in seconds
constexpr db::Statement kReleasedKeys{"idem_released_keys",
                                      "SELECT w.user_id, w.idempotency_key "
                                      "FROM jsonb_to_recordset($1::jsonb) AS w(user_id bigint, idempotency_key text) "
                                      "WHERE NOT EXISTS (SELECT FROM idempotency_keys k "
                                      "WHERE k.user_id = w.user_id AND k.idempotency_key = w.idempotency_key "
                                      "AND k.recovery_point <> 'finished' AND k.locked_at IS NOT NULL "
                                      "AND k.locked_at >= now() - make_interval(secs => $2))"};

std::string keys_json(const std::vector<std::pair<std::int64_t, std::string>>& keys) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartArray();
  for (const auto& [user_id, key] : keys) {
    writer.StartObject();
    writer.Key("user_id");
    writer.Int64(user_id);
    writer.Key("idempotency_key");
    writer.String(key.data(), static_cast<rapidjson::SizeType>(key.size()));
    writer.EndObject();
  }
  writer.EndArray();
  return {buffer.GetString(), buffer.GetSize()};
}

void run_again(std::vector<Resume>& waiters) {
  for (auto& resume : waiters) resume();
  waiters.clear();
}

}  // namespace

KeyWaiters::KeyWaiters(db::ConnectionPool& pool, KeyWaitersOptions options)
    : pool_(pool), options_(options), poller_([this] { poll_loop(); }) {}

KeyWaiters::~KeyWaiters() {
  std::map<KeyId, std::vector<Waiter>> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    dropped.swap(waiters_);
  }
  changed_.notify_all();
  poller_.join();
  // Dropped here, outside the lock and while every member is alive: a dropped continuation may
  // drop its request, and with it the place the request held (give_back).
  dropped.clear();
}

std::variant<std::shared_ptr<KeyWaiters::Place>, KeyWaiters::Refusal> KeyWaiters::reserve(std::int64_t user_id) {
  {
    std::lock_guard lock(mutex_);
    if (places_ >= options_.max_waiters) return Refusal::registry_full;
    auto& held = places_per_user_[user_id];
    if (held >= options_.max_waiters_per_user) return Refusal::user_at_share;
    ++held;
    ++places_;
  }
  try {
    return std::make_shared<Place>(*this, user_id);
  } catch (...) {
    give_back(user_id);
    throw;
  }
}

void KeyWaiters::give_back(std::int64_t user_id) {
  std::lock_guard lock(mutex_);
  --places_;
  auto it = places_per_user_.find(user_id);
  if (it == places_per_user_.end()) return;
  if (--it->second == 0) places_per_user_.erase(it);
}

std::size_t KeyWaiters::waiting() const {
  std::lock_guard lock(mutex_);
  return count_;
}

void KeyWaiters::add(const Place& place, const std::string& key, std::chrono::steady_clock::time_point deadline,
                     Resume resume) {
  {
    std::lock_guard lock(mutex_);
    waiters_[{place.user_id_, key}].push_back({deadline, std::move(resume)});
    ++count_;
  }
  changed_.notify_all();
}

void KeyWaiters::take_waiters_of(const KeyId& key, std::vector<Resume>& out) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  for (auto& waiter : it->second) out.push_back(std::move(waiter.resume));
  count_ -= it->second.size();
  waiters_.erase(it);
}

void KeyWaiters::key_released(std::int64_t user_id, const std::string& key) {
  std::vector<Resume> woken;
  {
    std::lock_guard lock(mutex_);
    if (count_ == 0) return;
    take_waiters_of({user_id, key}, woken);
  }
  run_again(woken);  // outside the lock: each posts its request to the workers
}

std::vector<KeyWaiters::KeyId> KeyWaiters::released_keys(const std::vector<KeyId>& keys) {
  static log::ThrottledWarning failed{"checking waited idempotency keys failed; waiters wait for their deadline"};
  std::vector<KeyId> released;
  try {
    auto lease = pool_.acquire(options_.checkout_timeout);
    db::Transaction tx(lease.conn(), lease.statement_timeout());
    auto rows = lease.exec(tx, kReleasedKeys, keys_json(keys), db::seconds_of(options_.lock_timeout));
    tx.commit();
    released.reserve(rows.size());
    for (const auto& row : rows) released.emplace_back(row[0].as<std::int64_t>(), row[1].as<std::string>());
  } catch (const std::exception& e) {
    // A busy pool or a database outage: the next tick asks again.
    if (failed.note(0)) log::warn("key waiters' check failed", {{"error", e.what()}});
  }
  return released;
}

void KeyWaiters::poll_loop() {
  std::vector<Resume> due;
  std::unique_lock lock(mutex_);
  auto next_poll = std::chrono::steady_clock::now();
  while (!stopping_) {
    if (count_ == 0) {
      changed_.wait(lock, [&] { return stopping_ || count_ > 0; });
      // A new waiter may have missed its key's release just before it was added: look at once.
      next_poll = std::chrono::steady_clock::now();
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    auto earliest_deadline = std::chrono::steady_clock::time_point::max();
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      auto& list = it->second;
      auto expired = std::partition(list.begin(), list.end(), [&](const Waiter& w) { return w.deadline > now; });
      for (auto w = expired; w != list.end(); ++w) due.push_back(std::move(w->resume));
      auto expired_count = static_cast<std::size_t>(list.end() - expired);
      count_ -= expired_count;
      list.erase(expired, list.end());
      for (const auto& w : list) earliest_deadline = std::min(earliest_deadline, w.deadline);
      it = list.empty() ? waiters_.erase(it) : std::next(it);
    }
    if (now >= next_poll && !waiters_.empty()) {
      std::vector<KeyId> keys;
      keys.reserve(waiters_.size());
      for (const auto& entry : waiters_) keys.push_back(entry.first);
      lock.unlock();
      run_again(due);
      auto released = released_keys(keys);
      lock.lock();
      for (const auto& key : released) take_waiters_of(key, due);
      next_poll = std::chrono::steady_clock::now() + options_.poll_interval;
    }
    if (!due.empty()) {
      lock.unlock();
      run_again(due);
      lock.lock();
      continue;  // deadlines and keys may have changed meanwhile
    }
    changed_.wait_until(lock, std::min(next_poll, earliest_deadline), [&] { return stopping_; });
  }
}

}  // namespace rr::idempotency
