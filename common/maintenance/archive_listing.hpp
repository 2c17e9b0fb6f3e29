// `archive list`: what the reaper archived (keys it deleted before they ever finished), for an
// operator who must settle each one by hand: was the customer charged (look up the payment
// idempotency key at the provider), does the rider need a ride.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/db/connection_pool.hpp"

namespace rr::maintenance {

// Timestamps are RFC 3339 in UTC with milliseconds.
struct ArchivedKey {
  std::int64_t id = 0;  // the key's id while it lived
  std::string archived_at;
  std::string created_at;
  std::string last_run_at;
  std::optional<std::string> locked_at;
  std::int64_t user_id = 0;
  std::string email;
  std::string idempotency_key;
  std::string request_method;
  std::string request_path;
  std::string recovery_point;
  std::string payment_idempotency_key;
  int attempts = 0;
  std::optional<std::string> last_error;
};

// Where the listing starts: an absolute time, a distance back from the database's now(), or the
// whole archive.
struct ArchiveSince {
  std::optional<std::string> timestamp;          // RFC 3339 / ISO 8601 text PostgreSQL reads as timestamptz
  std::optional<std::chrono::milliseconds> ago;  // archived at most this long ago
};

struct ArchivedKeys {
  std::vector<ArchivedKey> keys;  // oldest archive first, at most the limit
  std::int64_t total = 0;         // how many match, limit or not
};

class InvalidSince : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws InvalidSince when PostgreSQL cannot read `since.timestamp` (e.g. a 13th month).
ArchivedKeys list_archived_keys(db::PooledConnection& conn, const ArchiveSince& since, std::int64_t limit);

}  // namespace rr::maintenance
