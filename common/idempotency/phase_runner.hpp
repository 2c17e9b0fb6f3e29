// Drives a key through a flow's phases until it finishes or must stop. Generic: knows keys, locks,
// recovery points and the three phase results, nothing of rides. The API and the completer both
// call it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "common/db/coalesced_calls.hpp"
#include "common/db/connection_pool.hpp"
#include "common/idempotency/key_acquisition.hpp"
#include "common/idempotency/phase.hpp"

namespace rr::idempotency {

// How a run ended, in the runner's own terms; common/api/outcome_answers.hpp turns it into an HTTP
// answer, the completer into a log line.
struct Outcome {
  enum class Kind {
    finished,   // a final result is stored (fresh or found stored)
    transient,  // a phase asked to be retried later (retry_reason): nothing stored, key unlocked
    lock_lost,  // our lock was taken over mid-flight: the other owner carries on
    conflict,   // serialization failures persisted past the retries: key unlocked
    failed,     // internal error: key unlocked, a retry resumes at the last recovery point
  };
  Kind kind = Kind::failed;
  FinalResult result;                                   // for finished: the stored code and body, verbatim
  RetryReason retry_reason = RetryReason::unavailable;  // for transient
  std::string message;                                  // for logs and error bodies
  int retry_after_seconds = 0;                          // for transient and conflict
};

// Test seam: called after each committed phase with the new recovery point. Throwing from it
// simulates a process that dies there: the runner does not unlock (a dead process cannot).
using AfterCommitHook = std::function<void(const std::string& recovery_point)>;

// Deliberately not a std::exception: no error boundary of the product catches it, just as none
// survives a kill -9.
struct SimulatedCrash {
  std::string where;
};

struct RunnerOptions {
  int max_serialization_retries = 5;
  // Calls with a batch form (db::Call::batch_function) of concurrent requests share one round trip
  // and one commit, at most this many (db::CoalescedCalls); 1 runs each alone.
  std::size_t max_coalesced_calls = 64;
  // Calls or batches of one batch function running at once; the others queue for the next batch.
  std::size_t max_coalesced_in_flight = 1;
  std::chrono::milliseconds retry_jitter{20};
  AfterCommitHook after_commit;
};

class PhaseRunner {
 public:
  PhaseRunner(db::ConnectionPool& pool, RunnerOptions options = {})
      : pool_(pool),
        options_(std::move(options)),
        coalesced_(options_.max_coalesced_calls, options_.max_coalesced_in_flight) {}

  // `key` must be locked by us (from begin_key or acquire_key_by_id). Runs phases until a Response, a transient
  // failure, a lost lock or an error. Rethrows SimulatedCrash. With `section` (from begin_key):
  // when the first phase is local (see Phase) its atomic section continues the transaction that
  // created the key, and it must not check out another connection before that section; otherwise
  // the key is committed first.
  // With `carried` (from begin_key with a creating call): given to the phases (PhaseContext::carried).
  Outcome run(const Flow& flow, KeyRow key, std::unique_ptr<OpenSection> section = nullptr, Carried carried = {});

  // The coalescing of calls with a batch form, shared with begin_key (KeyConnections::coalesced),
  // whose creating call is the first phase's.
  db::CoalescedCalls& coalesced_calls() { return coalesced_; }
  const db::CoalescedCalls& coalesced_calls() const { return coalesced_; }

  // Counters since start, for metrics.
  std::uint64_t serialization_retries() const { return serialization_retries_.load(); }

 private:
  Outcome conflict(const KeyRow& key, const std::string& what);
  Outcome database_unavailable(const KeyRow& key, const std::string& message, const std::string& error);
  Outcome failed(const KeyRow& key, const std::string& error);
  // Releases the key's lock unless the outcome says it is not ours (lock_lost) or gone (finished).
  Outcome release_lock(const KeyRow& key, Outcome outcome);

  db::ConnectionPool& pool_;
  RunnerOptions options_;
  db::CoalescedCalls coalesced_;
  std::atomic<std::uint64_t> serialization_retries_{0};
  friend class RunnerContext;
};

}  // namespace rr::idempotency
