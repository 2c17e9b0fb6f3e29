// Coalesced calls: the leader hand-off, the batch call, each request's answer, and what a failed
// batch means for its requests.
#include "common/db/coalesced_calls.hpp"

#include <chrono>
#include <exception>
#include <pqxx/pqxx>
#include <stdexcept>
#include <utility>

#include "common/base/log.hpp"
#include "common/db/batch_failure.hpp"

namespace rr::db {

// One request's call. Owned jointly by its fiber and, while it is queued or in a batch, by the
// coalescer, so that a fiber unwinding never leaves a dangling entry behind; written by the
// leader under the mutex (the answer before `stage` says done), read by its owner after its
// wake-up.
struct CoalescedCalls::Waiting {
  enum class Stage {
    queued,       // in Kind::queue, waiting to be carried by a batch or handed the lead
    in_batch,     // taken into the batch a leader runs
    handed_lead,  // woken to lead the next batch
    leading,      // running a batch (its own call first)
    done,         // answered: answer, error or run_alone
  };
  const Call* call = nullptr;
  std::shared_ptr<fiber::Waker> waker;
  Stage stage = Stage::queued;
  bool run_alone = false;  // run its single call itself: the batch left it, or refused a row
  Answer answer;
  std::exception_ptr error;
  Batch batch;  // while leading: the batch it runs
};

// A request's place in its kind's queue or batch, for as long as its fiber is in run(): however
// run() ends (a fiber unwound while it waits, say), the place is given up as CoalescedCalls::leave
// says.
class CoalescedCalls::Place {
 public:
  Place(CoalescedCalls& calls, Kind& kind, std::shared_ptr<Waiting> me)
      : calls_(calls), kind_(kind), me_(std::move(me)) {}
  Place(const Place&) = delete;
  Place& operator=(const Place&) = delete;
  ~Place() {
    std::vector<std::shared_ptr<fiber::Waker>> wake;
    {
      std::lock_guard lock(calls_.mutex_);
      calls_.leave(kind_, *me_, wake);
    }
    // Waking never suspends, so this is safe while the fiber unwinds.
    for (auto& waker : wake) waker->wake();
  }

 private:
  CoalescedCalls& calls_;
  Kind& kind_;
  std::shared_ptr<Waiting> me_;
};

std::string_view fallback_label(CoalescedFallback cause) {
  switch (cause) {
    case CoalescedFallback::unanswered:
      return "unanswered";
    case CoalescedFallback::refused:
      return "refused";
    case CoalescedFallback::outage:
      return "outage";
    case CoalescedFallback::conflict:
      return "conflict";
    case CoalescedFallback::programming_error:
      return "programming_error";
  }
  return "unknown";
}

namespace {

// Appends `value` as an element of a PostgreSQL array literal: double-quoted, with '"' and '\'
// escaped, so that any text (a JSON body) stays one element.
void append_array_element(std::string& literal, const std::optional<std::string>& value) {
  if (!value) {
    literal += "NULL";
    return;
  }
  literal += '"';
  for (char c : *value) {
    if (c == '"' || c == '\\') literal += '\\';
    literal += c;
  }
  literal += '"';
}

// The first column of a batch row that is the single function's: after the ordinal and the SQLSTATE.
constexpr Row::size_type kBatchFirstColumn = 2;

CoalescedCalls::Answer run_alone(const Call& call, const std::function<ConnectionPool::Lease()>& acquire) {
  auto lease = acquire();
  auto rows = run_one_trip(lease, call);
  CoalescedCalls::Answer answer;
  answer.rows.assign(rows.begin(), rows.end());
  return answer;
}

CoalescedFallback fallback_for(BatchFailure failure) {
  switch (failure) {
    case BatchFailure::member_refused:
      return CoalescedFallback::refused;
    case BatchFailure::outage:
      return CoalescedFallback::outage;
    case BatchFailure::conflict:
      return CoalescedFallback::conflict;
    case BatchFailure::programming_error:
      break;
  }
  return CoalescedFallback::programming_error;
}

}  // namespace

Call batch_call(const std::string& batch_function, const std::vector<const Call*>& calls) {
  Call batch;
  batch.function = batch_function;
  const std::size_t arity = calls.empty() ? 0 : calls.front()->arguments.size();
  for (std::size_t i = 0; i < arity; ++i) {
    std::string literal = "{";
    for (std::size_t k = 0; k < calls.size(); ++k) {
      if (calls[k]->arguments.size() != arity) throw std::logic_error("calls of one batch differ in arity");
      if (k > 0) literal += ',';
      append_array_element(literal, calls[k]->arguments[i]);
    }
    literal += '}';
    batch.arguments.emplace_back(std::move(literal));
  }
  return batch;
}

CoalescedCalls::Answer CoalescedCalls::run(const Call& call, const std::function<ConnectionPool::Lease()>& acquire) {
  if (max_batch_ == 1 || call.batch_function.empty() || !fiber::active()) return run_alone(call, acquire);
  auto me = std::make_shared<Waiting>();
  me->call = &call;
  me->waker = fiber::Waker::for_this_fiber();
  Kind* kind = nullptr;
  bool leading = false;
  {
    std::lock_guard lock(mutex_);
    kind = &kinds_[call.batch_function];
    if (kind->in_flight >= max_in_flight_) {
      kind->queue.push_back(me);
    } else {
      ++kind->in_flight;
      me->stage = Waiting::Stage::leading;
      leading = true;
    }
  }
  Place place(*this, *kind, me);
  if (!leading) {
    // Woken exactly once: to lead, or answered (Waker::wait_until with no deadline returns only then).
    me->waker->wait_until(std::chrono::steady_clock::time_point::max());
    std::lock_guard lock(mutex_);
    if (me->stage == Waiting::Stage::handed_lead) {
      me->stage = Waiting::Stage::leading;
      leading = true;
    } else if (me->stage != Waiting::Stage::done) {
      // Place gives up its place in the queue or batch as this throws.
      log::error("coalesced call woken neither to lead nor answered",
                 {{"function", call.batch_function}, {"stage", static_cast<int>(me->stage)}});
      throw std::logic_error("coalesced call of " + call.batch_function + " woken neither to lead nor answered");
    }
  }
  if (leading) lead(*kind, me, acquire);
  if (me->error) std::rethrow_exception(me->error);
  // On this request's own fiber, so that the requests a batch left run side by side. Once: its
  // single call's failure is its own answer.
  if (me->run_alone) return run_alone(call, acquire);
  return std::move(me->answer);
}

std::map<std::string, CoalescedCalls::Totals> CoalescedCalls::totals() const {
  std::map<std::string, Totals> totals;
  std::lock_guard lock(mutex_);
  for (const auto& [function, kind] : kinds_) {
    totals[function] = {kind.queue.size(), kind.batches, kind.batched_calls, kind.fallbacks};
  }
  return totals;
}

void CoalescedCalls::lead(Kind& kind, const std::shared_ptr<Waiting>& leader,
                          const std::function<ConnectionPool::Lease()>& acquire) {
  Waiting& me = *leader;
  PreparedBatch prepared;
  {
    std::lock_guard lock(mutex_);
    // Its own call first: the batch's ordinal 1. (The batch holds its own entry too: cleared
    // below, or by leave() if the fiber unwinds first.)
    me.batch = {leader};
    while (me.batch.size() < max_batch_ && !kind.queue.empty()) {
      auto next = std::move(kind.queue.front());
      kind.queue.pop_front();
      next->stage = Waiting::Stage::in_batch;
      me.batch.push_back(std::move(next));
    }
    if (me.batch.size() > 1) {
      ++kind.batches;
      kind.batched_calls += me.batch.size();
      // Built while the mutex keeps each request's Call alive: a fiber that unwinds from here on
      // gives up its place (under the mutex) before its Call goes.
      std::vector<const Call*> calls;
      calls.reserve(me.batch.size());
      for (const auto& waiting : me.batch) calls.push_back(waiting->call);
      try {
        prepared.call = batch_call(me.call->batch_function, calls);
      } catch (const std::exception&) {
        prepared.failure = std::current_exception();
      }
    }
  }
  auto fallback = run_batch(me.batch, prepared, acquire);
  std::vector<std::shared_ptr<fiber::Waker>> wake;
  {
    std::lock_guard lock(mutex_);
    if (fallback) ++kind.fallbacks[static_cast<std::size_t>(*fallback)];
    for (auto& waiting : me.batch) {
      // One whose fiber ended meanwhile left its entry to the batch: answered to nobody.
      if (waiting.get() == &me || waiting->stage != Waiting::Stage::in_batch) continue;
      waiting->stage = Waiting::Stage::done;
      wake.push_back(waiting->waker);
    }
    me.batch.clear();
    me.stage = Waiting::Stage::done;
    hand_on_lead(kind, wake);
  }
  for (auto& waker : wake) waker->wake();
}

void CoalescedCalls::hand_on_lead(Kind& kind, std::vector<std::shared_ptr<fiber::Waker>>& wake) {
  // The calls that queued meanwhile are the next batch, led by the first of them.
  if (kind.queue.empty()) {
    --kind.in_flight;
    return;
  }
  auto next = std::move(kind.queue.front());
  kind.queue.pop_front();
  next->stage = Waiting::Stage::handed_lead;
  wake.push_back(next->waker);
}

void CoalescedCalls::leave(Kind& kind, Waiting& me, std::vector<std::shared_ptr<fiber::Waker>>& wake) {
  using Stage = Waiting::Stage;
  switch (me.stage) {
    case Stage::done:
    case Stage::in_batch:  // the leader answers the entry it holds, and wakes nobody for it
      break;
    case Stage::queued:
      for (auto it = kind.queue.begin(); it != kind.queue.end(); ++it) {
        if (it->get() == &me) {
          kind.queue.erase(it);
          break;
        }
      }
      break;
    case Stage::handed_lead:
      hand_on_lead(kind, wake);
      break;
    case Stage::leading:
      // Its fiber unwound while the batch was in flight: whether the batch committed is unknown,
      // as when a connection breaks during a commit. Its requests learn that, and the lead moves on.
      for (auto& waiting : me.batch) {
        if (waiting.get() == &me || waiting->stage != Stage::in_batch) continue;
        waiting->error = std::make_exception_ptr(
            pqxx::in_doubt_error("the request leading this batch of " + me.call->batch_function + " ended first"));
        waiting->stage = Stage::done;
        wake.push_back(waiting->waker);
      }
      me.batch.clear();
      hand_on_lead(kind, wake);
      break;
  }
  me.stage = Stage::done;
}

std::optional<CoalescedFallback> CoalescedCalls::run_batch(const Batch& batch, const PreparedBatch& prepared,
                                                           const std::function<ConnectionPool::Lease()>& acquire) {
  Waiting& first = *batch.front();
  if (batch.size() == 1) {
    // Alone but while in flight, so that the calls arriving meanwhile queue behind it. Its failure
    // is its single call's: no fallback.
    try {
      first.answer = run_alone(*first.call, acquire);
    } catch (const std::exception&) {
      first.error = std::current_exception();
    }
    return std::nullopt;
  }
  const std::string& batch_function = first.call->batch_function;

  // Each request's part, read into these first, so that an answer found unreadable half-way
  // leaves no request half-answered.
  std::vector<Answer> answers(batch.size());
  std::vector<std::exception_ptr> errors(batch.size());
  std::vector<bool> answered(batch.size(), false);
  std::exception_ptr failure;
  std::optional<BatchFailure> failure_kind;
  try {
    if (prepared.failure) std::rethrow_exception(prepared.failure);
    auto lease = acquire();
    auto rows = run_one_trip(lease, prepared.call);
    for (const auto& row : rows) {
      const auto ordinal = row[0].as<std::int64_t>();  // NULL throws: a bug like any unreadable answer
      if (ordinal < 1 || ordinal > static_cast<std::int64_t>(batch.size())) {
        throw std::logic_error(batch_function + " answered ordinal " + std::to_string(ordinal) + " in a batch of " +
                               std::to_string(batch.size()));
      }
      const auto index = static_cast<std::size_t>(ordinal - 1);
      answered[index] = true;
      if (!row[1].is_null()) {
        const std::string sqlstate = row[1].as<std::string>();
        errors[index] = std::make_exception_ptr(pqxx::sql_error(
            batch_function + ": this request's part failed with SQLSTATE " + sqlstate, "", sqlstate.c_str()));
        continue;
      }
      answers[index].first_column = kBatchFirstColumn;
      answers[index].rows.push_back(row);
    }
  } catch (const std::exception& e) {
    // Only what to do is decided here; nobody waits inside a catch clause on a fiber.
    failure = std::current_exception();
    failure_kind = classify_batch_failure(e);
    const log::Fields fields{{"function", batch_function}, {"requests", batch.size()}, {"error", e.what()}};
    switch (*failure_kind) {
      case BatchFailure::member_refused:
        log::info("coalesced batch refused a row; each request runs its single call once", fields);
        break;
      case BatchFailure::outage:
        log::warn("coalesced batch met a database outage; every request of it answers as one", fields);
        break;
      case BatchFailure::conflict:
        log::warn("coalesced batch lost a conflict; every request of it is retried as one", fields);
        break;
      case BatchFailure::programming_error:
        log::error("coalesced batch failed on a bug; every request of it fails, none is retried", fields);
        break;
    }
  }

  if (failure_kind) {
    for (const auto& waiting : batch) {
      // Refused: nothing of the batch committed, and only its single call tells whose row it was.
      if (*failure_kind == BatchFailure::member_refused) {
        waiting->run_alone = true;
      } else {
        waiting->error = failure;
      }
    }
    return fallback_for(*failure_kind);
  }
  bool any_unanswered = false;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!answered[i]) {
      batch[i]->run_alone = true;
      any_unanswered = true;
    } else if (errors[i]) {
      batch[i]->error = std::move(errors[i]);
    } else {
      batch[i]->answer = std::move(answers[i]);
    }
  }
  if (any_unanswered) return CoalescedFallback::unanswered;
  return std::nullopt;
}

}  // namespace rr::db
