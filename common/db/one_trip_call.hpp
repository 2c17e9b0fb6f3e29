// A call of one SQL function as a transaction of its own, in one round trip: the
// statement bound and the call go out as one simple query,
//   SET LOCAL statement_timeout = N; SELECT * FROM function('arg', 'arg', NULL)
// which PostgreSQL runs as one implicit transaction: the call commits or rolls back as a whole,
// and the bound ends with it. Nothing stays in the session, so it works through a
// transaction-pooling PgBouncer (DATABASE_PREPARED_STATEMENTS=off). With prepared statements on, a
// pooled call on a request fiber is a prepared statement of its session instead
// (prepared_calls.hpp), the same implicit transaction without the parse and plan. The arguments travel as quoted
// literals (escaped by libpq for the session's encoding), which PostgreSQL types by the
// function's parameters; the call is planned at every execution, but a one-line call is cheap to
// plan and the statements inside a PL/pgSQL function keep their cached plans.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/db/connection.hpp"
#include "common/db/connection_pool.hpp"
#include "common/db/result.hpp"
#include "common/db/sql_arguments.hpp"

namespace rr::db {

struct Call {
  std::string function;    // a function returning a table, a set or void
  SqlArguments arguments;  // text forms (sql_arguments.hpp); nullopt is NULL
  // The function's batch form, when concurrent calls may be coalesced (coalesced_calls.hpp).
  std::string batch_function;
};

// db::call("idem_finish_or_raise", key_id, token, 201, body)
template <typename... Args>
Call call(std::string function, const Args&... args) {
  Call made;
  made.function = std::move(function);
  made.arguments = sql_arguments(args...);
  return made;
}

// Appends `value` to `query` as the inside of a quoted literal.
using AppendEscaped = std::function<void(std::string& query, const std::string& value)>;

// The simple query that runs `call` bounded by `statement_timeout` (zero: no bound), each argument
// appended through `append_escaped` (the session's escaping, in the product; pgbench's script
// generator appends its variable references unchanged). The query's storage is reserved once,
// for the worst case of every argument escaped byte for byte.
std::string one_trip_query(const Call& call, std::chrono::milliseconds statement_timeout,
                           const AppendEscaped& append_escaped);

// Appends `value` escaped for a quoted literal on `conn` (libpq's PQescapeStringConn, for the
// session's encoding and standard_conforming_strings) straight into `query`: no string of its
// own per argument. A value invalid in the session's encoding is pqxx::argument_error, and
// `query` is left as it was.
void append_escaped(PGconn* conn, std::string& query, const std::string& value);

// Runs `call` on `conn`'s session as its own transaction in one round trip and returns the
// function's rows. Never resends: if the connection breaks, whether the call committed is unknown
// (the runner then answers "retry with the same key", which resumes from wherever the database
// has the key); a session already lost is pqxx::broken_connection without sending.
Result run_one_trip(Connection& conn, const Call& call, std::chrono::milliseconds statement_timeout);
// A call on a request fiber that had no answer within its connection's call_timeout
// (DATABASE_CALL_TIMEOUT): the session was closed (whether the call committed is unknown, as for
// any broken connection, which this is) and its pool drops it. Logged once where it happens.
class CallTimedOut : public pqxx::broken_connection {
 public:
  using pqxx::broken_connection::broken_connection;
};

// The same on a pooled connection, bounded by its statement_timeout() and, on a fiber, by its
// call_timeout(): past it, CallTimedOut and the connection discarded. On a fiber its socket stays
// registered with the I/O thread from one call to the next (PooledConnection::socket_watch), and
// in prepared-statement mode, where the session carries its bound, the call is a prepared
// statement of the session (prepared_calls.hpp) instead of the simple query.
Result run_one_trip(ConnectionPool::Lease& lease, const Call& call);

// The SQLSTATE of an error raised by our own functions (sql/functions/; the codes are listed in
// sql/006_one_round_trip_phases.sql).
inline constexpr const char* kLockTakenOver = "RR001";
inline constexpr const char* kMissingRow = "RR002";
bool has_sqlstate(const std::exception& error, std::string_view sqlstate);

}  // namespace rr::db
