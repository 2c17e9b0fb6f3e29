// The completer: finds requests whose client went away and drives them to the end through the very
// runner and flows the API uses, on behalf of their users. One batch per run_once().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/db/connection_pool.hpp"
#include "common/idempotency/phase_runner.hpp"
#include "common/jobs/enqueuer_wakeup.hpp"
#include "common/payments/stripe_client.hpp"

namespace rr::maintenance {

struct CompleterOptions {
  std::chrono::milliseconds min_age{std::chrono::seconds(300)};            // leave the client time to retry
  std::chrono::milliseconds last_run_threshold{std::chrono::seconds(60)};  // and back off after an attempt
  std::chrono::milliseconds lock_timeout{std::chrono::seconds(90)};        // a lock older than this is dead
  std::int64_t batch_size = 1000;
  // Polled between keys: a stop request leaves the rest of the batch for the next run (those keys
  // are unlocked, so nothing is lost) instead of holding up shutdown for a whole batch.
  std::function<bool()> stop_requested;
  // Test seam passed to the PhaseRunner (crash after a recovery point).
  idempotency::RunnerOptions runner;
};

struct CompleterReport {
  std::int64_t candidates = 0;  // keys the batch query returned
  std::int64_t completed = 0;   // finished (a 201 or a final 402)
  std::int64_t failed = 0;      // attempted and not finished; the key records the attempt
  std::int64_t skipped = 0;     // taken or finished by someone else first
  bool full_batch(std::int64_t batch_size) const { return candidates >= batch_size; }
};

// last_error is stored in a column of at most 1000 characters; keep it printable and short.
std::string short_error(std::string_view message);

class Completer {
 public:
  // `enqueuer_wakeup` is handed to the flows, which call it after committing staged jobs; null
  // leaves those jobs to the enqueuer's poll.
  Completer(db::ConnectionPool& pool, const payments::StripeClient& stripe, CompleterOptions options,
            jobs::EnqueuerWakeup* enqueuer_wakeup = nullptr);

  // One batch: every eligible key is attempted once, one failure never stops the others. Throws
  // only when the database is unreachable (the daemon loop backs off and retries).
  CompleterReport run_once();

 private:
  struct Candidate;
  enum class Result { completed, failed, skipped };
  Result complete(const Candidate& candidate);
  void record_failure(std::int64_t key_id, const std::string& error);

  db::ConnectionPool& pool_;
  const payments::StripeClient& stripe_;
  CompleterOptions options_;
  jobs::EnqueuerWakeup* enqueuer_wakeup_;
  idempotency::PhaseRunner runner_;
};

}  // namespace rr::maintenance
