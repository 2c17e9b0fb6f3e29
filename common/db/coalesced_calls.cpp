// Coalesced calls: the leader hand-off, the batch call and each request's answer.
#include "common/db/coalesced_calls.hpp"

#include <chrono>
#include <exception>
#include <memory>
#include <pqxx/pqxx>
#include <stdexcept>
#include <vector>

#include "common/fiber/fiber.hpp"

namespace rr::db {

// One request's call, parked on its fiber's stack until a leader has run it (done) or hands it
// the lead. Written by the leader under the mutex, read by its owner after its wake-up.
struct CoalescedCalls::Waiting {
  const Call* call = nullptr;
  std::shared_ptr<fiber::Waker> waker;
  bool lead = false;
  bool done = false;
  bool run_alone = false;  // the batch left this request to its single call
  Answer answer;
  std::exception_ptr error;
};

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
  Waiting me;
  me.call = &call;
  me.waker = fiber::Waker::for_this_fiber();
  Kind* kind = nullptr;
  {
    std::lock_guard lock(mutex_);
    kind = &kinds_[call.batch_function];
    if (kind->in_flight) {
      kind->queue.push_back(&me);
    } else {
      kind->in_flight = true;
      me.lead = true;
    }
  }
  bool leading = me.lead;
  if (!leading) {
    me.waker->wait_until(std::chrono::steady_clock::time_point::max());
    std::lock_guard lock(mutex_);
    leading = me.lead && !me.done;
  }
  if (leading) lead(*kind, me, acquire);
  if (me.error) std::rethrow_exception(me.error);
  // On this request's own fiber, so that the requests a batch left run side by side.
  if (me.run_alone) return run_alone(call, acquire);
  return std::move(me.answer);
}

std::map<std::string, CoalescedCalls::Totals> CoalescedCalls::totals() const {
  std::map<std::string, Totals> totals;
  std::lock_guard lock(mutex_);
  for (const auto& [function, kind] : kinds_) totals[function] = {kind.queue.size(), kind.batches, kind.batched_calls};
  return totals;
}

void CoalescedCalls::lead(Kind& kind, Waiting& me, const std::function<ConnectionPool::Lease()>& acquire) {
  std::deque<Waiting*> batch{&me};
  {
    std::lock_guard lock(mutex_);
    while (batch.size() < max_batch_ && !kind.queue.empty()) {
      batch.push_back(kind.queue.front());
      kind.queue.pop_front();
    }
    if (batch.size() > 1) {
      ++kind.batches;
      kind.batched_calls += batch.size();
    }
  }
  run_batch(batch, acquire);
  std::vector<std::shared_ptr<fiber::Waker>> wake;
  {
    std::lock_guard lock(mutex_);
    for (auto* waiting : batch) {
      if (waiting == &me) continue;
      waiting->done = true;
      wake.push_back(waiting->waker);
    }
    // The calls that queued meanwhile are the next batch, led by the first of them.
    if (kind.queue.empty()) {
      kind.in_flight = false;
    } else {
      Waiting* next = kind.queue.front();
      kind.queue.pop_front();
      next->lead = true;
      wake.push_back(next->waker);
    }
  }
  for (auto& waker : wake) waker->wake();
}

void CoalescedCalls::run_batch(std::deque<Waiting*>& batch, const std::function<ConnectionPool::Lease()>& acquire) {
  if (batch.size() == 1) {
    // Alone but while in flight, so that the calls arriving meanwhile queue behind it.
    try {
      batch.front()->answer = run_alone(*batch.front()->call, acquire);
    } catch (...) {
      batch.front()->error = std::current_exception();
    }
    return;
  }
  std::vector<const Call*> calls;
  calls.reserve(batch.size());
  for (auto* waiting : batch) calls.push_back(waiting->call);
  const std::string& batch_function = batch.front()->call->batch_function;

  try {
    auto lease = acquire();
    auto rows = run_one_trip(lease, batch_call(batch_function, calls));
    std::vector<bool> answered(batch.size(), false);
    for (const auto& row : rows) {
      auto ordinal = row[0].as<std::int64_t>();
      if (ordinal < 1 || ordinal > static_cast<std::int64_t>(batch.size())) continue;
      auto& waiting = *batch[static_cast<std::size_t>(ordinal - 1)];
      answered[static_cast<std::size_t>(ordinal - 1)] = true;
      if (!row[1].is_null()) {
        const std::string sqlstate = row[1].as<std::string>();
        waiting.error = std::make_exception_ptr(pqxx::sql_error(
            batch_function + ": this request's part failed with SQLSTATE " + sqlstate, "", sqlstate.c_str()));
        continue;
      }
      waiting.answer.first_column = kBatchFirstColumn;
      waiting.answer.rows.push_back(row);
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!answered[i]) batch[i]->run_alone = true;
    }
  } catch (const pqxx::broken_connection&) {
    // Whether the batch committed is unknown: every request learns it as its own call would have.
    auto failure = std::current_exception();
    for (auto* waiting : batch) waiting->error = failure;
  } catch (...) {
    // The database refused the batch, and nothing of it committed: each request alone, so only the
    // one at fault fails.
    for (auto* waiting : batch) waiting->run_alone = true;
  }
}

}  // namespace rr::db
