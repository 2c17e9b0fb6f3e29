// The enqueuer: moves committed staged_jobs rows into Sidekiq's Redis queue, at least once and
// never lost. A job leaves Postgres only in the transaction that saw Redis accept it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "common/db/connection.hpp"
#include "common/db/statements.hpp"
#include "common/jobs/enqueuer_settings.hpp"
#include "common/jobs/staged_jobs_listener.hpp"
#include "common/redis/connection.hpp"

namespace rr::metrics {
class Counter;
class Histogram;
}  // namespace rr::metrics

namespace rr::jobs {

struct EnqueueReport {
  std::int64_t enqueued = 0;  // jobs pushed to Redis and deleted from staged_jobs
  std::int64_t passes = 0;    // batches (transactions) that moved jobs
  bool full_batch(std::int64_t batch_size) const { return enqueued >= batch_size; }
};

class Enqueuer {
 public:
  // Connects lazily: a daemon started while Postgres or Redis is down keeps trying.
  explicit Enqueuer(EnqueuerSettings config);
  ~Enqueuer();
  Enqueuer(const Enqueuer&) = delete;
  Enqueuer& operator=(const Enqueuer&) = delete;

  // One batch: in one READ COMMITTED transaction, claim up to batch_size rows (FOR UPDATE SKIP
  // LOCKED, so several enqueuers share the table), push them all in one Redis round trip, delete
  // them, commit. If Redis fails, the transaction rolls back and the jobs stay staged; if the
  // commit fails after the push, they are pushed again later with the same jid. With
  // REDIS_MIN_REPLICAS, a push that fewer replicas acknowledge (WAIT) rolls back the same way and
  // throws ReplicasShort. Errors propagate
  // (the loop backs off); a broken connection is replaced on the next call.
  EnqueueReport run_once();

  // For --once: batches until one comes back short (nothing left), a stop is requested or
  // `max_batches` ran.
  EnqueueReport drain(std::int64_t max_batches = 100'000);

  // Whether there is a wake-up channel (a LISTEN); without one the loop polls every idle sleep.
  bool has_wake_up() const { return listener_.has_value(); }
  // The loop's wake-up: true when a NOTIFY (or a fresh LISTEN) says there may be work.
  bool wait_for_jobs(std::chrono::milliseconds timeout);

  const EnqueuerSettings& config() const { return config_; }

  // Failure injection for tests: runs after Redis accepted a batch and before the COMMIT, the one
  // window where a crash leaves jobs both pushed and staged.
  void set_before_commit_hook(std::function<void()> hook) { before_commit_ = std::move(hook); }

 private:
  db::Connection& database();
  redis::Connection& redis();
  std::int64_t move_batch();

  EnqueuerSettings config_;
  std::unique_ptr<db::Connection> database_;
  std::optional<db::SessionStatements> statements_;  // of database_'s session
  redis::MasterConnector redis_connector_;
  std::optional<redis::Connection> redis_;
  // Set when a batch fell short of REDIS_MIN_REPLICAS: until one is acknowledged again, each
  // pass asks ROLE first and pushes nothing while the master has too few replicas.
  bool replicas_short_ = false;
  std::optional<StagedJobsListener> listener_;
  std::function<void()> before_commit_;
  metrics::Counter& jobs_metric_;
  metrics::Histogram& lag_metric_;  // rocket_rides_enqueuer_lag_seconds
  // rocket_rides_enqueuer_unacknowledged_batches_total, by reason: wait_short (pushed, WAIT fell
  // short) or replicas_missing (not pushed, the master had too few replicas).
  metrics::Counter& wait_short_metric_;
  metrics::Counter& replicas_missing_metric_;
};

}  // namespace rr::jobs
