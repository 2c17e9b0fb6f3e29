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
  // That request's bytes as sent (request_bytes()), or empty: a retry that sends the same bytes is
  // the same request, replayed without parsing its parameters again.
  std::string request_bytes = {};
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

  // What decides a request's parameters, as sent: method, target (path and query), Content-Type
  // (which reading the body takes) and body. Equal bytes mean equal parameters, validated the same
  // way. Empty for a body above kMaxRequestBytesBody: a large body is not kept twice per entry.
  static constexpr std::size_t kMaxRequestBytesBody = 1024;
  static std::string request_bytes(std::string_view method, std::string_view target, std::string_view content_type,
                                   std::string_view body);
  // Whether `stored` (request_bytes() of an earlier request, not empty) equals this request's.
  static bool same_request_bytes(std::string_view stored, std::string_view method, std::string_view target,
                                 std::string_view content_type, std::string_view body);

 private:
  static void append_cache_key(std::string& out, std::int64_t user_id, std::string_view idempotency_key);
  static void append_request_bytes(std::string& out, std::string_view method, std::string_view target,
                                   std::string_view content_type, std::string_view body);

  base::TtlCache<std::shared_ptr<const FinishedResponse>> cache_;
};

}  // namespace rr::idempotency
