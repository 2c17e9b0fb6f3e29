// Coalesced commits: the calls of concurrent requests to the same function go
// to PostgreSQL together, one round trip and one commit for a batch, each request with its own
// answer. No timer: a call that finds fewer than `max_in_flight` of its kind in flight runs alone
// at once; the calls that arrive while that many are in flight queue, and when one returns the
// first of them runs the whole queue (up to `max_batch`) as one call of the function's batch form,
// as PostgreSQL's own group commit takes the commits that queued behind the one being flushed.
//
// Why more than one in flight: a batch's round trip ends with its commit's WAL flush, and with one
// batch in flight the next cannot start before that flush is over, so at a few dozen connections
// the API waits on flush latency while the database has cores and connections to spare. A second
// batch runs its statements while the first is flushed, and PostgreSQL's group commit flushes the
// two commits together. Each batch in flight holds one pooled connection, so the bound (per batch
// function) must leave the pool room for everything else.
//
// A batch form takes each argument of the single function as an array (one element per request,
// in order) and returns, per request, rows of: its 1-based ordinal, the SQLSTATE the single
// function would have raised for it (NULL when it succeeded), then the single function's columns
// (sql/functions/rides_record_charges_and_finish.sql, rides_create_with_keys.sql). A request whose
// row names a SQLSTATE gets the pqxx::sql_error the single call would have thrown; a request with
// no row (the batch form leaves a request it cannot answer alone to the single function) runs its
// single call itself.
//
// A batch that fails is never a reason to multiply the load (db::classify_batch_failure): when
// PostgreSQL refused a row (classes 22, 23) and the statement cannot say whose, nothing of it
// committed and each request runs its single call once, so only the one at fault fails; an outage
// (a lost connection, an exhausted pool, a timeout, a shutdown) reaches every request of the batch
// as its own call's would, with no second try; a serialization failure or deadlock too, for the
// caller's retry of conflicts to run them again together; anything else is a bug, logged once and
// thrown to every request, never retried. An answer that names a request the batch did not carry
// is such a bug. Fallbacks are counted by cause (Totals::fallbacks).
//
// Only on a request fiber: elsewhere (the completer's threads) a call runs alone as before.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/db/connection_pool.hpp"
#include "common/db/one_trip_call.hpp"
#include "common/fiber/fiber.hpp"

namespace rr::db {

// Why a batch did not answer every request from its own rows.
enum class CoalescedFallback {
  unanswered,         // the batch left requests to their single calls (by design, see above)
  refused,            // PostgreSQL refused a row of it: every request ran its single call once
  outage,             // every request answered as an outage
  conflict,           // serialization failure or deadlock: every request got it, for the retry
  programming_error,  // a bug: every request got it, logged once
};
inline constexpr std::size_t kCoalescedFallbacks = 5;
// The cause's label on the metrics page: "unanswered", "refused", ...
std::string_view fallback_label(CoalescedFallback cause);

class CoalescedCalls {
 public:
  // `max_batch` 1 turns coalescing off; `max_in_flight` bounds the calls and batches of one
  // batch function running at once (at least 1).
  explicit CoalescedCalls(std::size_t max_batch, std::size_t max_in_flight = 1)
      : max_batch_(max_batch == 0 ? 1 : max_batch), max_in_flight_(max_in_flight == 0 ? 1 : max_in_flight) {}

  // A request's rows: those of its single call, or its own rows of a batch, where the single
  // function's columns start at `first_column`.
  struct Answer {
    std::vector<Row> rows;
    Row::size_type first_column = 0;
  };

  // Runs `call` (whose batch_function names its batch form) alone or in a batch; returns its
  // request's rows once its work committed, throws what its single call would have thrown
  // otherwise. `acquire` checks out the connection a call runs on: none is held while waiting.
  Answer run(const Call& call, const std::function<ConnectionPool::Lease()>& acquire);

  // Per batch function, for metrics: the calls waiting for the batch in flight, the batches of
  // two calls or more run so far with the calls they carried, and those batches' fallbacks by
  // cause (indexed by CoalescedFallback).
  struct Totals {
    std::size_t queued = 0;
    std::uint64_t batches = 0;
    std::uint64_t batched_calls = 0;
    std::array<std::uint64_t, kCoalescedFallbacks> fallbacks{};
  };
  std::map<std::string, Totals> totals() const;

 private:
  struct Waiting;
  using Batch = std::vector<std::shared_ptr<Waiting>>;
  struct Kind {                 // the calls of one batch function
    std::size_t in_flight = 0;  // calls and batches running, at most max_in_flight_
    std::deque<std::shared_ptr<Waiting>> queue;
    std::uint64_t batches = 0;
    std::uint64_t batched_calls = 0;
    std::array<std::uint64_t, kCoalescedFallbacks> fallbacks{};
  };
  class Place;
  // A batch's call, or why it could not be made (calls of different arity: a bug).
  struct PreparedBatch {
    Call call;
    std::exception_ptr failure;
  };
  void lead(Kind& kind, const std::shared_ptr<Waiting>& leader, const std::function<ConnectionPool::Lease()>& acquire);
  // Runs `batch` (`prepared` when it carries more than one call) and leaves each request's
  // answer, error or run_alone in its entry; the fallback when there was one.
  std::optional<CoalescedFallback> run_batch(const Batch& batch, const PreparedBatch& prepared,
                                             const std::function<ConnectionPool::Lease()>& acquire);
  // The mutex held: `me` leaves wherever it is (its fiber unwinds, or its wake-up was one that
  // cannot happen) without leaving a batch unanswered or the lead with nobody; the wakers to wake
  // once the mutex is released go to `wake`.
  void leave(Kind& kind, Waiting& me, std::vector<std::shared_ptr<fiber::Waker>>& wake);
  // The mutex held: the next queued call leads in the place of the one that ended, or that
  // place is free.
  void hand_on_lead(Kind& kind, std::vector<std::shared_ptr<fiber::Waker>>& wake);

  const std::size_t max_batch_;
  const std::size_t max_in_flight_;
  mutable std::mutex mutex_;
  std::map<std::string, Kind> kinds_;
};

// The batch call of `calls` (all of one function, same arity): each argument an array literal of
// the calls' values, in order. Exposed for tests.
Call batch_call(const std::string& batch_function, const std::vector<const Call*>& calls);

}  // namespace rr::db
