// A bounded, short-lived memory of finished keys' stored responses, so that a replay (a client's
// retry of a request that already finished) is answered without a database round trip.
//
// Safe because a finished key is immutable until the reaper deletes it (REAPER_MAX_AGE, 72 h by
// default): an entry can only repeat what the database would say. Entries live at most `ttl`
// (seconds to minutes, far below the reaper's horizon) and at most `capacity` are kept, oldest
// first out (common/base/ttl_cache.hpp). Each process has its own; a miss simply asks the database.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/base/ttl_cache.hpp"

namespace rr::idempotency {

struct FinishedResponse {
  std::string request_fingerprint;  // method, path and canonical parameters of the request that finished
  int status = 0;
  std::string body;
};

class FinishedResponses {
 public:
  FinishedResponses(std::size_t capacity, std::chrono::milliseconds ttl) : cache_(capacity, ttl) {}

  // Shared, not copied: a replay reads the entry on every retry of the key.
  std::shared_ptr<const FinishedResponse> find(std::int64_t user_id, std::string_view idempotency_key);
  void remember(std::int64_t user_id, std::string_view idempotency_key, FinishedResponse response);
  std::size_t size() const { return cache_.size(); }

  // What identifies a request for "same key, same request?": equal canonical parameters mean
  // equal values (the canonical form is produced from parsed numbers).
  static std::string fingerprint(std::string_view method, std::string_view path, std::string_view params_json);

 private:
  static void append_cache_key(std::string& out, std::int64_t user_id, std::string_view idempotency_key);

  base::TtlCache<std::shared_ptr<const FinishedResponse>> cache_;
};

}  // namespace rr::idempotency
