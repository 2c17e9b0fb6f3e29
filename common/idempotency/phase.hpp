// What a phase is and what it may return, after the article's directed acyclic state machine.
// A phase knows its own domain; the runner knows only keys, locks and recovery points.
#pragma once

#include <concepts>
#include <functional>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <variant>

#include "common/db/connection_pool.hpp"
#include "common/db/one_trip_call.hpp"
#include "common/db/transaction.hpp"
#include "common/idempotency/key_acquisition.hpp"
#include "common/idempotency/key_row.hpp"

namespace rr::idempotency {

// Carry on: the atomic section changed nothing on the key.
struct NoOp {};
// Move the key to a new recovery point, in the same transaction as the phase's work.
struct RecoveryPoint {
  std::string name;
};
// Finish: store this result on the key (replayed verbatim later) and unlock it. The code is the
// flow's own (the API's flows store HTTP statuses); the runner only stores and returns it.
struct FinalResult {
  int code = 200;
  std::string body;
};
using PhaseResult = std::variant<NoOp, RecoveryPoint, FinalResult>;

// Why a phase asks to be retried later.
enum class RetryReason {
  unavailable,  // a dependency (the payment provider, the database) is down or timed out
  not_ready,    // the entity the flow acts on is not in a state to act on yet (another flow is on it)
};

// A phase may fail in a way the caller should retry later (the provider is down): nothing is
// stored, the key is unlocked, and the next attempt resumes at the same recovery point.
class TransientFailure : public std::runtime_error {
 public:
  TransientFailure(RetryReason reason, const std::string& message, int retry_after_seconds)
      : std::runtime_error(message), reason(reason), retry_after_seconds(retry_after_seconds) {}
  RetryReason reason;
  int retry_after_seconds;
};

// Our lock was taken over (it expired and another process acquired it): stop, write nothing.
class LockLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PhaseContext;
using PhaseFunction = std::function<PhaseResult(PhaseContext&)>;

// A flow's entry: the phase, and whether it is local: nothing but database work in its atomic
// section, no foreign call before it. A new key's local first phase continues the transaction
// that created the key (one commit for both). Any other phase finds the key committed before it
// runs, so a foreign call never goes out while the key, and the payment key stored on it, could
// still roll back, nor while a transaction is open.
struct Phase {
  template <typename F>
  requires std::invocable<F&, PhaseContext&> Phase(F function)
      : run(std::move(function)) {}  // NOLINT: a bare function is a non-local phase
  PhaseFunction run;
  bool local = false;
  // Optional, for a flow's first (local) phase: the same phase and the key's creation as one SQL
  // call (see CreatingCall). The API then creates a new key and runs this phase in one round trip;
  // `run` still serves keys that exist already and callers without the call.
  CreatingCall create_call;
};

// Marks a phase local (see Phase).
template <typename F>
Phase local_phase(F function) {
  Phase phase(std::move(function));
  phase.local = true;
  return phase;
}

// A flow is data for the runner: recovery point -> the phase that runs from there.
using Flow = std::map<std::string, Phase, std::less<>>;

// Given to each phase: the key as it stands and a way to run an atomic, fenced section.
class PhaseContext {
 public:
  virtual ~PhaseContext() = default;
  virtual const KeyRow& key() const = 0;
  // Runs `work` in one transaction and applies the returned result to the key row in it, fenced
  // on our lock token: if the lock was taken over, everything rolls back and LockLost is thrown.
  // Serialization failures and deadlocks are retried a few times with jitter.
  virtual PhaseResult atomic(const std::function<PhaseResult(db::Transaction&)>& work) = 0;
  // The phase's atomic section as one SQL call: sent in one round trip, run as one implicit
  // transaction (db::run_one_trip). The call's function applies `applied` to the key itself,
  // fenced on our lock token (as idem_finish_or_raise in sql/functions/ does),
  // and raises SQLSTATE RR001 when the lock was taken over: everything rolls back and LockLost is
  // thrown here. Every other check the phase needs must raise inside the function too, since
  // nothing can be rolled back once the rows are here. Serialization failures and deadlocks are
  // retried as in atomic(). Not for a phase that continues the transaction that created its key.
  virtual db::Result atomic_call(const db::Call& call, const PhaseResult& applied) = 0;
  // What the call that created the key returned for this phase's use (see Carried); empty unless
  // this run created the key with the flow's creating call.
  virtual const Carried& carried() const = 0;
  // Inside `work`: the section's session, which runs statements in the pool's mode.
  virtual db::SessionStatements& statements() = 0;
  // Inside `work`: runs `statement` in the section's transaction `tx`.
  template <typename... Args>
  db::Result exec(pqxx::transaction_base& tx, const db::Statement& statement, Args&&... args) {
    return statements().exec(tx, statement, std::forward<Args>(args)...);
  }
};

}  // namespace rr::idempotency
