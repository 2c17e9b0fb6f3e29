// A bounded, short-lived memory of finished keys' stored responses, so that a replay (a client's
// retry of a request that already finished) is answered without a database round trip.
//
// Safe because a finished key is immutable until the reaper deletes it (REAPER_MAX_AGE, 72 h by
// default): an entry can only repeat what the database would say. Entries live at most `ttl`
// (seconds to minutes, far below the reaper's horizon) and at most `capacity` are kept, oldest
// first out. Each process has its own; a miss simply asks the database.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rr::idempotency {

struct FinishedResponse {
  std::string request_fingerprint;  // method, path and canonical parameters of the request that finished
  int status = 0;
  std::string body;
};

class FinishedResponses {
 public:
  FinishedResponses(std::size_t capacity, std::chrono::milliseconds ttl) : capacity_(capacity), ttl_(ttl) {}

  std::optional<FinishedResponse> find(std::int64_t user_id, std::string_view idempotency_key);
  void remember(std::int64_t user_id, std::string_view idempotency_key, FinishedResponse response);
  std::size_t size() const;

  // What identifies a request for "same key, same request?": equal canonical parameters mean
  // equal values (the canonical form is produced from parsed numbers).
  static std::string fingerprint(std::string_view method, std::string_view path, std::string_view params_json);

 private:
  static std::string cache_key(std::int64_t user_id, std::string_view idempotency_key);

  struct Entry {
    FinishedResponse response;
    std::chrono::steady_clock::time_point expires;
  };
  std::size_t capacity_;
  std::chrono::milliseconds ttl_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::deque<std::string> insertion_order_;  // for the size bound: the oldest entry goes first
};

}  // namespace rr::idempotency
