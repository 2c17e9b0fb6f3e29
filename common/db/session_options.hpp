// How every database session of a binary behaves (DATABASE_PREPARED_STATEMENTS,
// DATABASE_STATEMENT_TIMEOUT): the pool hands them to each connection it opens.
#pragma once

#include <chrono>

#include "common/db/statements.hpp"

namespace rr::db {

struct SessionOptions {
  StatementMode statements = StatementMode::prepared;
  std::chrono::milliseconds statement_timeout{30000};  // per statement; 0: none
  // How long a request fiber waits for one call's answer on its pooled connection before giving
  // up on it (0: no bound): the connection is discarded, never returned to the pool, and the call
  // fails as an outage (one_trip_call.hpp). The server's statement_timeout normally answers first;
  // this bounds what the server cannot: a partitioned or stopped server, PgBouncer or backend.
  std::chrono::milliseconds call_timeout{35000};
};

// Where the bound is set. A session of our own (prepared-statement mode: a transaction-pooling
// PgBouncer, which hands one server session to many clients, needs DATABASE_PREPARED_STATEMENTS=off)
// carries it from its start, set once when the pool connects. Otherwise each transaction sets it
// with SET LOCAL, so that it holds on whichever server session PgBouncer lends and ends with the
// transaction. A SET LOCAL is a statement of its own that PostgreSQL parses and runs: one per
// phase of every request, about a tenth of PostgreSQL's CPU per new key
// (measured with pgbench on the product's calls).
inline bool session_carries_timeout(const SessionOptions& options) {
  return options.statements == StatementMode::prepared && options.statement_timeout.count() > 0;
}

// What a transaction must set itself: nothing (0) when the session carries the bound.
inline std::chrono::milliseconds per_transaction_timeout(const SessionOptions& options) {
  return session_carries_timeout(options) ? std::chrono::milliseconds{0} : options.statement_timeout;
}

}  // namespace rr::db
