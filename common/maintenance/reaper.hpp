// The reaper: forgets idempotency keys past the horizon (72 h), one short transaction per batch, and
// archives the ones that never finished so that a human can still act on them. It also deletes the
// rider pages' expired sessions (sql/008_rider_sessions.sql), in batches of the same size.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/db/connection_pool.hpp"

namespace rr::maintenance {

struct ReaperOptions {
  std::chrono::milliseconds max_age{std::chrono::hours(72)};
  std::int64_t batch_size = 1000;
  // A key whose lock is younger than this is in flight (a client retrying at the horizon): leave it
  // for the next pass rather than pull the key from under its request.
  std::chrono::milliseconds lock_timeout{std::chrono::seconds(90)};
};

struct ReaperReport {
  std::int64_t deleted = 0;           // keys removed, archived ones included
  std::int64_t archived = 0;          // of which had not finished and were copied to idempotency_keys_archive
  std::int64_t sessions_deleted = 0;  // expired rider sessions removed
  bool full_batch(std::int64_t batch_size) const { return deleted >= batch_size || sessions_deleted >= batch_size; }
};

class Reaper {
 public:
  Reaper(db::ConnectionPool& pool, ReaperOptions options) : pool_(pool), options_(options) {}

  // One batch of keys in one transaction, then one batch of expired sessions in another. Rows
  // another transaction holds are skipped, not waited for, so several reapers and the API never
  // queue behind each other; a batch lost to a crash is redone.
  ReaperReport run_once();

 private:
  db::ConnectionPool& pool_;
  ReaperOptions options_;
};

}  // namespace rr::maintenance
