// Coalesced commits (issue 31, point 2): the calls of concurrent requests to the same function go
// to PostgreSQL together, one round trip and one commit for a batch, each request with its own
// answer. No timer: a call that finds none of its kind in flight runs alone at once; the calls
// that arrive while one is in flight queue, and when it returns the first of them runs the whole
// queue (up to `max_batch`) as one call of the function's batch form, as PostgreSQL's own group
// commit takes the commits that queued behind the one being flushed.
//
// A batch form takes each argument of the single function as an array (one element per request,
// in order) and returns, per request, rows of: its 1-based ordinal, the SQLSTATE the single
// function would have raised for it (NULL when it succeeded), then the single function's columns
// (sql/functions/rides_record_charges_and_finish.sql, rides_create_with_keys.sql). A request whose
// row names a SQLSTATE gets the pqxx::sql_error the single call would have thrown; a request with
// no row (the batch form leaves a request it cannot answer alone to the single function) runs its
// single call itself. When the batch call fails (a broken connection aside, where every request
// learns the same), nothing of it committed, and each request runs its single call itself, so
// that a request the database refuses gets its own error and the others still commit.
//
// Only on a request fiber: elsewhere (the completer's threads) a call runs alone as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/db/connection_pool.hpp"
#include "common/db/one_trip_call.hpp"

namespace rr::db {

class CoalescedCalls {
 public:
  // `max_batch` 1 turns coalescing off.
  explicit CoalescedCalls(std::size_t max_batch) : max_batch_(max_batch == 0 ? 1 : max_batch) {}

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

  // Per batch function, for metrics: the calls waiting for the batch in flight, and the batches
  // of two calls or more run so far with the calls they carried.
  struct Totals {
    std::size_t queued = 0;
    std::uint64_t batches = 0;
    std::uint64_t batched_calls = 0;
  };
  std::map<std::string, Totals> totals() const;

 private:
  struct Waiting;
  struct Kind {  // the calls of one batch function
    bool in_flight = false;
    std::deque<Waiting*> queue;
    std::uint64_t batches = 0;
    std::uint64_t batched_calls = 0;
  };
  void lead(Kind& kind, Waiting& me, const std::function<ConnectionPool::Lease()>& acquire);
  void run_batch(std::deque<Waiting*>& batch, const std::function<ConnectionPool::Lease()>& acquire);

  const std::size_t max_batch_;
  mutable std::mutex mutex_;
  std::map<std::string, Kind> kinds_;
};

// The batch call of `calls` (all of one function, same arity): each argument an array literal of
// the calls' values, in order. Exposed for tests.
Call batch_call(const std::string& batch_function, const std::vector<const Call*>& calls);

}  // namespace rr::db
