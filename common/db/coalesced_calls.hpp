// Coalesced commits (issue 31, point 2): the calls of concurrent requests to the same function go
// to PostgreSQL together, one round trip and one commit for a batch, each request with its own
// answer. No timer: a call that finds none of its kind in flight runs alone at once; the calls
// that arrive while one is in flight queue, and when it returns the first of them runs the whole
// queue (up to `max_batch`) as one call of the function's batch form, as PostgreSQL's own group
// commit takes the commits that queued behind the one being flushed.
//
// A batch form takes each argument of the single function as an array (one element per request,
// in order) and returns one row per request: its 1-based ordinal and the SQLSTATE the single
// function would have raised for it, NULL when it succeeded (sql/functions/
// rides_record_charges_and_finish.sql). A request whose row names a SQLSTATE gets the
// pqxx::sql_error the single call would have thrown. When the batch call itself fails (a broken
// connection aside, where every request learns the same), its requests run again one by one, so
// that a request the database refuses gets its own error and the others still commit.
//
// Only on a request fiber: elsewhere (the completer's threads) a call runs alone as before.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "common/db/connection_pool.hpp"
#include "common/db/one_trip_call.hpp"

namespace rr::db {

class CoalescedCalls {
 public:
  // `max_batch` 1 turns coalescing off.
  explicit CoalescedCalls(std::size_t max_batch) : max_batch_(max_batch == 0 ? 1 : max_batch) {}

  // Runs `call` (whose batch_function names its batch form) alone or in a batch; returns when its
  // request's work committed, throws what its single call would have thrown otherwise.
  // `acquire` checks out the connection a batch runs on.
  void run(const Call& call, const std::function<ConnectionPool::Lease()>& acquire);

 private:
  struct Waiting;
  struct Kind {  // the calls of one batch function
    bool in_flight = false;
    std::deque<Waiting*> queue;
  };
  void lead(Kind& kind, Waiting& me, const std::function<ConnectionPool::Lease()>& acquire);
  void run_batch(std::deque<Waiting*>& batch, const std::function<ConnectionPool::Lease()>& acquire);

  const std::size_t max_batch_;
  std::mutex mutex_;
  std::map<std::string, Kind> kinds_;
};

// The batch call of `calls` (all of one function, same arity): each argument an array literal of
// the calls' values, in order. Exposed for tests.
Call batch_call(const std::string& batch_function, const std::vector<const Call*>& calls);

}  // namespace rr::db
