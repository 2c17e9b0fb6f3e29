// The phase loop, the fenced atomic section and the error boundary of the workflow.
#include "common/idempotency/phase_runner.hpp"

#include <thread>

#include "common/base/log.hpp"
#include "common/base/random.hpp"
#include "common/idempotency/key_acquisition.hpp"

namespace rr::idempotency {

// The fence is the transaction's last statement and applies the phase's result to the key in the
// same round trip: if another process took the lock over, no row matches, we roll back (the
// phase's writes with it) and stop. Under READ COMMITTED the UPDATE re-checks the token on the
// newest row version, so a takeover that committed meanwhile is always seen.
const db::Statement kFence{"idem_fence",
                           "UPDATE idempotency_keys SET last_run_at = now() WHERE id = $1 AND lock_token = $2::uuid "
                           "RETURNING id"};
const db::Statement kMoveRecoveryPoint{"idem_move_recovery_point",
                                       "UPDATE idempotency_keys SET recovery_point = $3, last_run_at = now() "
                                       "WHERE id = $1 AND lock_token = $2::uuid RETURNING id"};
const db::Statement kFinish{"idem_finish",
                            "UPDATE idempotency_keys SET recovery_point = 'finished', response_code = $3, "
                            "response_body = $4, locked_at = NULL, lock_token = NULL, last_run_at = now() "
                            "WHERE id = $1 AND lock_token = $2::uuid RETURNING id"};

class RunnerContext : public PhaseContext {
 public:
  RunnerContext(PhaseRunner& runner, KeyRow& key) : runner_(runner), key_(key) {}
  const KeyRow& key() const override { return key_; }

  const char* prepare(const db::Statement& statement) override {
    if (!lease_) throw std::logic_error("prepare() called outside an atomic section");
    return lease_->prepare(statement);
  }

  PhaseResult atomic(const std::function<PhaseResult(pqxx::work&)>& work) override {
    for (int attempt = 0;; ++attempt) {
      try {
        return atomic_once(work);
      } catch (const pqxx::serialization_failure&) {
        if (attempt >= runner_.options_.max_serialization_retries) throw;
      } catch (const pqxx::deadlock_detected&) {
        if (attempt >= runner_.options_.max_serialization_retries) throw;
      }
      ++runner_.serialization_retries_;
      std::this_thread::sleep_for(jitter(runner_.options_.retry_jitter * (attempt + 1)));
    }
  }

 private:
  PhaseResult atomic_once(const std::function<PhaseResult(pqxx::work&)>& work) {
    auto conn = runner_.pool_.acquire();
    pqxx::work tx(conn.conn());
    lease_ = &conn;
    PhaseResult result;
    try {
      result = work(tx);
    } catch (...) {
      lease_ = nullptr;
      throw;
    }
    lease_ = nullptr;
    pqxx::result fenced;
    if (auto* point = std::get_if<RecoveryPoint>(&result)) {
      fenced = tx.exec_prepared(conn.prepare(kMoveRecoveryPoint), key_.id, key_.lock_token, point->name);
    } else if (auto* response = std::get_if<Response>(&result)) {
      fenced = tx.exec_prepared(conn.prepare(kFinish), key_.id, key_.lock_token, response->status, response->body);
    } else {
      fenced = tx.exec_prepared(conn.prepare(kFence), key_.id, key_.lock_token);
    }
    if (fenced.empty()) throw LockLost("lock on key " + std::to_string(key_.id) + " was taken over");
    tx.commit();
    // The in-memory key follows the database only once the commit succeeded.
    if (auto* point = std::get_if<RecoveryPoint>(&result)) {
      key_.recovery_point = point->name;
    } else if (auto* response = std::get_if<Response>(&result)) {
      key_.recovery_point = kFinished;
      key_.response_code = response->status;
      key_.response_body = response->body;
      key_.lock_token.clear();
    }
    return result;
  }

  PhaseRunner& runner_;
  KeyRow& key_;
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

Outcome PhaseRunner::conflict(const KeyRow& key, const std::string& what) {
  try_unlock(pool_, key);
  log::warn("serialization failures persisted past retries", {{"key_id", key.id}, {"error", what}});
  Outcome out;
  out.kind = Outcome::Kind::conflict;
  out.status = 409;
  out.error_type = "idempotency_error";
  out.message = "A conflicting request was being processed; please retry.";
  out.retry_after_seconds = 1;
  return out;
}

Outcome PhaseRunner::run(const Flow& flow, KeyRow key) {
  RunnerContext context(*this, key);
  // A flow is acyclic, so it finishes within as many steps as it has phases.
  for (std::size_t step = 0; step <= flow.size() + 1; ++step) {
    if (key.recovery_point == kFinished) {
      Outcome done;
      done.kind = Outcome::Kind::finished;
      done.status = key.response_code.value_or(500);
      done.body = key.response_body.value_or("");
      return done;
    }
    auto phase = flow.find(key.recovery_point);
    if (phase == flow.end()) {
      try_unlock(pool_, key);
      Outcome failed;
      failed.message = "no phase for recovery point " + key.recovery_point;
      log::error("workflow has no phase for recovery point",
                 {{"key_id", key.id}, {"recovery_point", key.recovery_point}});
      return failed;
    }
    std::string before = key.recovery_point;
    try {
      PhaseResult result = phase->second(context);
      if (std::holds_alternative<NoOp>(result) || key.recovery_point == before) {
        throw std::logic_error("phase " + before + " made no progress");
      }
      if (options_.after_commit) options_.after_commit(key.recovery_point);
    } catch (const SimulatedCrash&) {
      throw;
    } catch (const TransientFailure& e) {
      try_unlock(pool_, key);
      Outcome transient;
      transient.kind = Outcome::Kind::transient;
      transient.status = e.status;
      transient.error_type = e.type;
      transient.message = e.what();
      transient.retry_after_seconds = e.retry_after_seconds;
      return transient;
    } catch (const LockLost& e) {
      Outcome lost;
      lost.kind = Outcome::Kind::lock_lost;
      lost.status = 409;
      lost.message = e.what();
      log::warn("idempotency key lock lost; the new owner carries on",
                {{"key_id", key.id}, {"recovery_point", key.recovery_point}});
      return lost;
    } catch (const pqxx::serialization_failure& e) {
      return conflict(key, e.what());
    } catch (const pqxx::deadlock_detected& e) {
      return conflict(key, e.what());
    } catch (const std::exception& e) {
      try_unlock(pool_, key);
      Outcome failed;
      failed.kind = Outcome::Kind::failed;
      failed.status = 500;
      failed.message = e.what();
      log::error("workflow phase failed",
                 {{"key_id", key.id}, {"recovery_point", key.recovery_point}, {"error", e.what()}});
      return failed;
    }
  }
  try_unlock(pool_, key);
  Outcome failed;
  failed.message = "flow did not finish";
  return failed;
}

}  // namespace rr::idempotency
