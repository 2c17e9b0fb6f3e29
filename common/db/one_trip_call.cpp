// One-round-trip function calls: rendering and running the simple query, or the statement a
// session prepared for the call.
#include "common/db/one_trip_call.hpp"

#include <array>
#include <optional>
#include <pqxx/pqxx>
#include <utility>
#include <vector>

#include "common/base/log.hpp"
#include "common/db/sql_errors.hpp"
#include "common/fiber/fiber.hpp"
#include "common/fiber/kept_socket_watch.hpp"

namespace rr::db {
namespace {

// libpqxx expects its connection in blocking mode: the fiber's call switches it to non-blocking
// for itself only.
class NonblockingForTheCall {
 public:
  explicit NonblockingForTheCall(PGconn* pg) : pg_(pg) {
    if (PQsetnonblocking(pg_, 1) != 0) throw_connection_lost(pg_);
  }
  ~NonblockingForTheCall() { PQsetnonblocking(pg_, 0); }
  NonblockingForTheCall(const NonblockingForTheCall&) = delete;
  NonblockingForTheCall& operator=(const NonblockingForTheCall&) = delete;

 private:
  PGconn* pg_;
};

// Reads every result of what was just sent on `pg`. The query may hold two statements (SET LOCAL
// ...; SELECT ...): a result each. The rows are the last tuples result's; an error is the first
// error result's, thrown once all results are read so the session is left idle and usable. A
// session lost on the way is pqxx::broken_connection and reads as closed (PQstatus is
// CONNECTION_BAD), so its pool drops it. `wait_readable` suspends until the socket has input;
// null when the session blocks in PQgetResult itself (off a fiber).
Result collect_results(PGconn* pg, const std::string& query, const std::function<void()>& wait_readable) {
  std::optional<Result> rows;
  std::optional<std::pair<std::string, std::string>> first_error;  // message, SQLSTATE
  for (;;) {
    if (wait_readable) {
      while (PQisBusy(pg) != 0) {
        wait_readable();
        if (PQconsumeInput(pg) == 0) throw_connection_lost(pg);
      }
    }
    PGresult* result = PQgetResult(pg);
    if (result == nullptr) break;
    switch (PQresultStatus(result)) {
      case PGRES_TUPLES_OK:
        rows.emplace(result);
        break;
      case PGRES_COMMAND_OK:
      case PGRES_EMPTY_QUERY:
        // What PQexec would return had no statement rows (a tuples result still wins).
        if (!rows) {
          rows.emplace(result);
        } else {
          PQclear(result);
        }
        break;
      default: {
        if (!first_error) {
          const char* sqlstate = PQresultErrorField(result, PG_DIAG_SQLSTATE);
          first_error.emplace(PQresultErrorMessage(result), sqlstate ? sqlstate : "");
        }
        PQclear(result);
        break;
      }
    }
  }
  if (PQstatus(pg) == CONNECTION_BAD) throw_connection_lost(pg);
  if (first_error) throw_sql_error(first_error->first, first_error->second, query);
  if (!rows) throw pqxx::failure("the call returned no rows result: " + query);
  return std::move(*rows);
}

[[noreturn]] void throw_not_sent(PGconn* pg) {
  if (PQstatus(pg) == CONNECTION_BAD) throw_connection_lost(pg);
  throw pqxx::failure(PQerrorMessage(pg));
}

// The call in blocking mode, for a thread that may block (off a fiber, or on a worker).
template <typename Send>
Result run_blocking(PGconn* pg, const Send& send, const std::string& query) {
  if (send() == 0) throw_not_sent(pg);
  return collect_results(pg, query, nullptr);
}

// The same with libpq's asynchronous API, the fiber suspended on the socket (the I/O thread serves
// others) instead of a thread blocked in PQexec. The server-side statement_timeout in the query
// bounds the call, as in the blocking path; `deadline` bounds the wait for an answer on our side
// (time_point::max(): none), and passing it is CallTimedOut with the call still in flight: the
// caller must close the session. Sent once.
//
// The socket waits go through `kept` when the connection keeps its registration (a pooled one),
// otherwise through a SocketWatch of the call's own.
//
// `send` queues the call (PQsendQuery, PQsendPrepare or PQsendQueryPrepared; 0 on failure) and
// `query` is its text, for error messages.
template <typename Send>
Result run_on_fiber(PGconn* pg, const Send& send, const std::string& query, rr::fiber::KeptSocketWatch* kept,
                    std::chrono::steady_clock::time_point deadline) {
  NonblockingForTheCall nonblocking(pg);
  if (send() == 0) throw_not_sent(pg);
  // This connection's socket as it is now: after a reconnect the same number may name another.
  rr::fiber::SocketIdentity socket{PQsocket(pg), pg, PQbackendPID(pg)};
  std::optional<rr::fiber::SocketWatch> own;
  if (!kept) own.emplace(socket.socket);
  auto wait = [&](bool readable) {
    bool ready = kept ? (readable ? kept->wait_readable(socket, deadline) : kept->wait_writable(socket, deadline))
                      : (readable ? own->wait_readable(deadline) : own->wait_writable(deadline));
    if (!ready) throw CallTimedOut("no answer from the database within DATABASE_CALL_TIMEOUT");
  };
  for (;;) {
    int flushed = PQflush(pg);
    if (flushed == 0) break;
    if (flushed < 0) throw_connection_lost(pg);
    wait(false);
  }
  return collect_results(pg, query, [&] { wait(true); });
}

// The open session of `conn`: one that is gone (closed, or lost and not yet replaced) is a broken
// connection before anything is sent, as libpqxx answers for a connection it cannot use.
PGconn* open_session(Connection& conn) {
  PGconn* pg = conn.session();
  if (pg == nullptr || PQstatus(pg) != CONNECTION_OK) throw pqxx::broken_connection("the database session is closed");
  return pg;
}

}  // namespace

std::string one_trip_query(const Call& call, std::chrono::milliseconds statement_timeout,
                           const AppendEscaped& append_escaped) {
  std::size_t worst = 64 + call.function.size();
  for (const auto& argument : call.arguments) worst += 4 + (argument ? 2 * argument->size() + 1 : 4);
  std::string query;
  query.reserve(worst);
  if (statement_timeout.count() > 0) {
    query += "SET LOCAL statement_timeout = ";
    query += std::to_string(statement_timeout.count());
    query += "; ";
  }
  query += "SELECT * FROM ";
  query += call.function;
  query += '(';
  for (std::size_t i = 0; i < call.arguments.size(); ++i) {
    if (i > 0) query += ", ";
    const auto& argument = call.arguments[i];
    if (argument) {
      query += '\'';
      append_escaped(query, *argument);
      query += '\'';
    } else {
      query += "NULL";
    }
  }
  query += ')';
  return query;
}

void append_escaped(PGconn* conn, std::string& query, const std::string& value) {
  const std::size_t at = query.size();
  query.resize(at + 2 * value.size() + 1);  // libpq's bound, its terminating zero included
  int error = 0;
  const std::size_t written = PQescapeStringConn(conn, query.data() + at, value.data(), value.size(), &error);
  if (error != 0) {
    query.resize(at);
    throw pqxx::argument_error(PQerrorMessage(conn));
  }
  query.resize(at + written);
}

namespace {

Result run_one_trip_watched(Connection& conn, const Call& call, std::chrono::milliseconds statement_timeout,
                            rr::fiber::KeptSocketWatch* kept, std::chrono::steady_clock::time_point deadline) {
  PGconn* pg = open_session(conn);
  std::string query = one_trip_query(
      call, statement_timeout, [&](std::string& out, const std::string& value) { append_escaped(pg, out, value); });
  auto send = [&] { return PQsendQuery(pg, query.c_str()); };
  if (!rr::fiber::active()) return run_blocking(pg, send, query);
  return run_on_fiber(pg, send, query, kept, deadline);
}

// The call as a prepared statement of the session (prepared_calls.hpp): prepared in a round trip
// of its own the first time this session makes it, then executed by name with the arguments as
// text parameters (NULL for none). Like the simple query it runs as one implicit transaction,
// committed at the Sync that ends the execution.
Result run_prepared_on_fiber(PGconn* pg, PreparedCalls& prepared, const Call& call, rr::fiber::KeptSocketWatch* kept,
                             std::chrono::steady_clock::time_point deadline) {
  const auto arity = call.arguments.size();
  const PreparedCalls::Entry* entry = prepared.find(pg, call.function, arity);
  if (entry == nullptr) {
    auto next = prepared.next(call.function, arity);
    run_on_fiber(
        pg, [&] { return PQsendPrepare(pg, next.name.c_str(), next.sql.c_str(), static_cast<int>(arity), nullptr); },
        next.sql, kept, deadline);
    entry = &prepared.remember(std::move(next));
  }
  constexpr std::size_t kInlineArguments = 16;
  std::array<const char*, kInlineArguments> inline_values{};
  std::vector<const char*> more_values;
  const char** values = inline_values.data();
  if (arity > kInlineArguments) {
    more_values.resize(arity);
    values = more_values.data();
  }
  for (std::size_t i = 0; i < arity; ++i) values[i] = call.arguments[i] ? call.arguments[i]->c_str() : nullptr;
  return run_on_fiber(
      pg,
      [&] {
        return PQsendQueryPrepared(pg, entry->name.c_str(), static_cast<int>(arity), values, nullptr, nullptr, 0);
      },
      entry->sql, kept, deadline);
}

// The deadline of a call that starts now and may wait `timeout` (0: none).
std::chrono::steady_clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::now() + timeout;
}

}  // namespace

Result run_one_trip(Connection& conn, const Call& call, std::chrono::milliseconds statement_timeout) {
  return run_one_trip_watched(conn, call, statement_timeout, nullptr, std::chrono::steady_clock::time_point::max());
}

Result run_one_trip(ConnectionPool::Lease& lease, const Call& call) {
  // A session of our own (prepared-statement mode, which also carries the bound, so there is no
  // SET LOCAL to send: per_transaction_timeout): the call is a prepared statement of the session.
  // Through a transaction-pooling PgBouncer (mode off) it stays the simple query, which needs
  // nothing of the server session it lands on.
  const auto deadline = deadline_after(lease.pooled().call_timeout());
  try {
    if (lease.statements().mode() == StatementMode::prepared && rr::fiber::active()) {
      return run_prepared_on_fiber(open_session(lease.conn()), lease.pooled().prepared_calls(), call,
                                   &lease.pooled().socket_watch(), deadline);
    }
    return run_one_trip_watched(lease.conn(), call, lease.statement_timeout(), &lease.pooled().socket_watch(),
                                deadline);
  } catch (const CallTimedOut&) {
    // The answer may still come: closing the session is the only way to be sure no later call
    // reads it. The pool drops a closed connection when the lease goes back; the server ends the
    // statement at its statement_timeout, or when it next writes to the closed socket.
    lease.conn().disconnect();
    log::warn("database call passed DATABASE_CALL_TIMEOUT: its connection is closed and dropped from the pool",
              {{"function", call.function}, {"call_timeout", lease.pooled().call_timeout()}});
    throw;
  }
}

bool has_sqlstate(const std::exception& error, std::string_view sqlstate) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error);
  return sql && sql->sqlstate() == sqlstate;
}

}  // namespace rr::db
