// The phase loop, the fenced atomic section and the error boundary of the workflow.
#include "common/idempotency/phase_runner.hpp"

#include <thread>

#include "common/base/log.hpp"
#include "common/base/random.hpp"
#include "common/db/one_trip_call.hpp"
#include "common/db/outage.hpp"
#include "common/fiber/fiber.hpp"
#include "common/idempotency/key_acquisition.hpp"
#include "common/idempotency/key_statements.hpp"

namespace rr::idempotency {

class RunnerContext : public PhaseContext {
 public:
  RunnerContext(PhaseRunner& runner, KeyRow& key, std::unique_ptr<OpenSection> section, Carried carried)
      : runner_(runner), key_(key), section_(std::move(section)), carried_(std::move(carried)) {}
  const KeyRow& key() const override { return key_; }
  const Carried& carried() const override { return carried_; }

  db::Result atomic_call(const db::Call& call, const PhaseResult& applied) override {
    if (section_) throw std::logic_error("a phase continuing the transaction that created its key runs in atomic()");
    return retrying_conflicts(/*retryable=*/true, [&] {
      try {
        db::Result rows;  // the calls with a batch form a phase makes return no rows
        if (!call.batch_function.empty()) {
          runner_.coalesced_.run(call, [&] { return runner_.pool_.acquire(); });
        } else {
          auto lease = runner_.pool_.acquire();
          rows = db::run_one_trip(lease, call);
        }
        apply(applied);
        return rows;
      } catch (const pqxx::sql_error& e) {
        if (db::has_sqlstate(e, db::kLockTakenOver)) throw lock_lost();
        throw;
      }
    });
  }

  db::SessionStatements& statements() override {
    if (!lease_) throw std::logic_error("statements() called outside an atomic section");
    return lease_->statements();
  }

  PhaseResult atomic(const std::function<PhaseResult(db::Transaction&)>& work) override {
    // A failed section that created the key took the key with it: retrying could only fence
    // against nothing, so the client's retry starts over instead.
    bool creates_key = section_ != nullptr;
    // A libpqxx transaction blocks: on a request fiber it runs on a worker while the fiber waits.
    return fiber::blocking([&] { return retrying_conflicts(!creates_key, [&] { return atomic_once(work); }); });
  }

  // Rolls back the transaction that created the key if the first phase did not use it.
  void drop_open_section() {
    if (section_) fiber::blocking([&] { section_.reset(); });
  }
  // For a phase that is not local: the key is stored on its own before the phase runs.
  void commit_open_section() {
    if (!section_) return;
    auto section = std::move(section_);
    fiber::blocking([&] { section->tx.commit(); });
  }

 private:
  // Runs `once` again after a serialization failure or a deadlock, a few times with jitter, when
  // `retryable`; anything else, or the last failure, goes to the caller.
  template <typename Once>
  auto retrying_conflicts(bool retryable, Once once) -> decltype(once()) {
    for (int attempt = 0;; ++attempt) {
      try {
        return once();
      } catch (const pqxx::serialization_failure&) {
        if (!retryable || attempt >= runner_.options_.max_serialization_retries) throw;
      } catch (const pqxx::deadlock_detected&) {
        if (!retryable || attempt >= runner_.options_.max_serialization_retries) throw;
      }
      ++runner_.serialization_retries_;
      fiber::sleep_for(jitter(runner_.options_.retry_jitter * (attempt + 1)));
    }
  }

  LockLost lock_lost() const { return LockLost("lock on key " + std::to_string(key_.id) + " was taken over"); }

  PhaseResult atomic_once(const std::function<PhaseResult(db::Transaction&)>& work) {
    // The first section of a new key continues the transaction that created it; every other
    // section checks out a connection of its own.
    std::unique_ptr<OpenSection> section = std::move(section_);
    if (!section) section = std::make_unique<OpenSection>(runner_.pool_.acquire());
    auto& conn = section->lease;
    auto& tx = section->tx;
    lease_ = &conn;
    PhaseResult result;
    try {
      result = work(tx);
    } catch (...) {
      lease_ = nullptr;
      throw;
    }
    lease_ = nullptr;
    db::Result fenced;
    if (auto* point = std::get_if<RecoveryPoint>(&result)) {
      fenced = conn.exec(tx, statements::kMoveRecoveryPoint, key_.id, key_.lock_token, point->name);
    } else if (auto* response = std::get_if<FinalResult>(&result)) {
      fenced = conn.exec(tx, statements::kFinish, key_.id, key_.lock_token, response->code, response->body);
    } else {
      fenced = conn.exec(tx, statements::kFence, key_.id, key_.lock_token);
    }
    if (fenced.empty()) throw lock_lost();
    tx.commit();
    apply(result);
    return result;
  }

  // The in-memory key follows the database only once the commit succeeded.
  void apply(const PhaseResult& result) {
    if (const auto* point = std::get_if<RecoveryPoint>(&result)) {
      key_.recovery_point = point->name;
    } else if (const auto* response = std::get_if<FinalResult>(&result)) {
      key_.recovery_point = kFinished;
      key_.response_code = response->code;
      key_.response_body = response->body;
      key_.lock_token.clear();
    }
  }

  PhaseRunner& runner_;
  KeyRow& key_;
  std::unique_ptr<OpenSection> section_;        // the creating transaction, until the first section
  Carried carried_;                             // what the creating call returned, if one created the key
  db::ConnectionPool::Lease* lease_ = nullptr;  // set only while a phase's work runs
};

namespace {

void try_unlock(db::ConnectionPool& pool, const KeyRow& key) {
  try {
    auto conn = pool.acquire();
    unlock_key(conn, key);
  } catch (const std::exception& e) {
    // The lock expires on its own after IDEMPOTENCY_KEY_LOCK_TIMEOUT.
    log::warn("could not unlock idempotency key", {{"key_id", key.id}, {"error", e.what()}});
  }
}

}  // namespace

// The outcomes below only describe and log: the caller releases the key's lock (release_lock)
// once it has left the catch clause it made them in. A request fiber must never suspend inside a
// catch clause: the C++ runtime keeps the exceptions being handled per thread, not per fiber, and
// another fiber catching on the same thread meanwhile would corrupt that stack.
Outcome PhaseRunner::database_unavailable(const KeyRow& key, const std::string& message, const std::string& error) {
  // The connection broke, a statement ran past DATABASE_STATEMENT_TIMEOUT, or a COMMIT's outcome is
  // unknown: the key is wherever the database has it (the phase committed or not), and a retry
  // with the same key resumes from there.
  log::warn("database unavailable during a phase",
            {{"key_id", key.id}, {"recovery_point", key.recovery_point}, {"error", error}});
  Outcome out;
  out.kind = Outcome::Kind::transient;
  out.retry_reason = RetryReason::unavailable;
  out.message = message;
  out.retry_after_seconds = 2;
  return out;
}

Outcome PhaseRunner::failed(const KeyRow& key, const std::string& error) {
  log::error("workflow phase failed", {{"key_id", key.id}, {"recovery_point", key.recovery_point}, {"error", error}});
  Outcome out;
  out.kind = Outcome::Kind::failed;
  out.message = error;
  return out;
}

Outcome PhaseRunner::conflict(const KeyRow& key, const std::string& what) {
  log::warn("serialization failures persisted past retries", {{"key_id", key.id}, {"error", what}});
  Outcome out;
  out.kind = Outcome::Kind::conflict;
  out.message = "A conflicting request was being processed; please retry.";
  out.retry_after_seconds = 1;
  return out;
}

Outcome PhaseRunner::release_lock(const KeyRow& key, Outcome outcome) {
  // A lost lock is the new owner's to release; a finished key has none.
  if (outcome.kind != Outcome::Kind::lock_lost && outcome.kind != Outcome::Kind::finished) try_unlock(pool_, key);
  return outcome;
}

Outcome PhaseRunner::run(const Flow& flow, KeyRow key, std::unique_ptr<OpenSection> section, Carried carried) {
  RunnerContext context(*this, key, std::move(section), std::move(carried));
  // A creating call committed the flow's first phase before the run: the hook sees that commit as
  // it sees every other phase's.
  if (context.carried().row && options_.after_commit) {
    std::optional<Outcome> hook_failed;
    try {
      options_.after_commit(key.recovery_point);
    } catch (const SimulatedCrash&) {
      throw;
    } catch (const std::exception& e) {
      hook_failed = failed(key, e.what());  // as for a hook that throws after any other phase
    }
    if (hook_failed) return release_lock(key, std::move(*hook_failed));
  }
  // A flow is acyclic, so it finishes within as many steps as it has phases.
  for (std::size_t step = 0; step <= flow.size() + 1; ++step) {
    if (key.recovery_point == kFinished) {
      Outcome done;
      done.kind = Outcome::Kind::finished;
      done.result = {key.response_code.value_or(500), key.response_body.value_or("")};
      return done;
    }
    auto phase = flow.find(key.recovery_point);
    if (phase == flow.end()) {
      context.drop_open_section();  // before try_unlock needs a connection of its own
      return release_lock(key, failed(key, "no phase for recovery point " + key.recovery_point));
    }
    std::string before = key.recovery_point;
    std::optional<Outcome> stopped;  // set in a catch clause, acted on after it
    try {
      // Ends (rolls back) an unused creating transaction before any handler below needs a connection.
      struct DropOpenSection {
        RunnerContext& context;
        ~DropOpenSection() { context.drop_open_section(); }
      } drop_open_section{context};
      if (!phase->second.local) context.commit_open_section();
      PhaseResult result = phase->second.run(context);
      if (std::holds_alternative<NoOp>(result) || key.recovery_point == before) {
        throw std::logic_error("phase " + before + " made no progress");
      }
      if (options_.after_commit) options_.after_commit(key.recovery_point);
    } catch (const SimulatedCrash&) {
      throw;
    } catch (const TransientFailure& e) {
      Outcome transient;
      transient.kind = Outcome::Kind::transient;
      transient.retry_reason = e.reason;
      transient.message = e.what();
      transient.retry_after_seconds = e.retry_after_seconds;
      stopped = std::move(transient);
    } catch (const LockLost& e) {
      Outcome lost;
      lost.kind = Outcome::Kind::lock_lost;
      lost.message = e.what();
      log::warn("idempotency key lock lost; the new owner carries on",
                {{"key_id", key.id}, {"recovery_point", key.recovery_point}});
      stopped = std::move(lost);
    } catch (const pqxx::serialization_failure& e) {
      stopped = conflict(key, e.what());
    } catch (const pqxx::deadlock_detected& e) {
      stopped = conflict(key, e.what());
    } catch (const std::exception& e) {
      auto outage = db::outage_message(e);
      stopped = outage ? database_unavailable(key, *outage, e.what()) : failed(key, e.what());
    }
    if (stopped) return release_lock(key, std::move(*stopped));
  }
  return release_lock(key, failed(key, "flow did not finish"));
}

}  // namespace rr::idempotency
