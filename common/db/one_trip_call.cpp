// One-round-trip function calls: rendering and running the simple query, or the statement a
// session prepared for the call.
#include "common/db/one_trip_call.hpp"

#include <array>
#include <charconv>
#include <optional>
#include <utility>
#include <vector>

#include "common/db/raw_libpq.hpp"
#include "common/db/transaction.hpp"
#include "common/fiber/fiber.hpp"
#include "common/fiber/kept_socket_watch.hpp"

namespace rr::db {
namespace {

// A transaction object for libpqxx's bookkeeping only: it sends nothing of its own (the query
// string carries its own implicit transaction) and runs the query exactly once, where
// pqxx::nontransaction may retry a query on a broken connection.
class ImplicitTransaction : public pqxx::transaction_base {
 public:
  explicit ImplicitTransaction(pqxx::connection_base& conn)
      : pqxx::internal::namedclass{"implicit transaction"}, pqxx::transaction_base(conn) {
    Begin();
  }
  ~ImplicitTransaction() noexcept override { End(); }

 private:
  void do_begin() override {}
  pqxx::result do_exec(const char query[]) override { return direct_exec(query, 0); }
  void do_commit() override {}
  void do_abort() override {}
};

pqxx::result run_blocking(pqxx::connection_base& conn, const std::string& query) {
  ImplicitTransaction tx(conn);
  auto rows = tx.exec(query);
  tx.commit();
  return rows;
}

// The exception libpqxx 6.4 throws for an error result (result::ThrowSQLError, private there):
// callers tell a serialization failure, a deadlock, a broken connection and an error of our own
// functions apart by these types and the SQLSTATE.
[[noreturn]] void throw_like_libpqxx(const std::string& message, const std::string& sqlstate,
                                     const std::string& query) {
  const char* code = sqlstate.c_str();
  auto is = [&](const char* expected) { return sqlstate == expected; };
  if (sqlstate.size() == 5) {
    switch (code[0]) {
      case '0':
        if (code[1] == '8') throw pqxx::broken_connection(message);
        if (code[1] == 'A') throw pqxx::feature_not_supported(message, query, code);
        break;
      case '2':
        if (code[1] == '2') throw pqxx::data_exception(message, query, code);
        if (code[1] == '3') {
          if (is("23001")) throw pqxx::restrict_violation(message, query, code);
          if (is("23502")) throw pqxx::not_null_violation(message, query, code);
          if (is("23503")) throw pqxx::foreign_key_violation(message, query, code);
          if (is("23505")) throw pqxx::unique_violation(message, query, code);
          if (is("23514")) throw pqxx::check_violation(message, query, code);
          throw pqxx::integrity_constraint_violation(message, query, code);
        }
        if (code[1] == '4') throw pqxx::invalid_cursor_state(message, query, code);
        if (code[1] == '6') throw pqxx::invalid_sql_statement_name(message, query, code);
        break;
      case '3':
        if (code[1] == '4') throw pqxx::invalid_cursor_name(message, query, code);
        break;
      case '4':
        if (is("40000")) throw pqxx::transaction_rollback(message);
        if (is("40001")) throw pqxx::serialization_failure(message);
        if (is("40003")) throw pqxx::statement_completion_unknown(message);
        if (is("40P01")) throw pqxx::deadlock_detected(message);
        if (is("42501")) throw pqxx::insufficient_privilege(message, query, code);
        if (is("42601")) throw pqxx::syntax_error(message, query, code);
        if (is("42703")) throw pqxx::undefined_column(message, query, code);
        if (is("42883")) throw pqxx::undefined_function(message, query, code);
        if (is("42P01")) throw pqxx::undefined_table(message, query, code);
        break;
      case '5':
        if (code[1] == '3') {
          if (is("53100")) throw pqxx::disk_full(message, query, code);
          if (is("53200")) throw pqxx::out_of_memory(message, query, code);
          if (is("53300")) throw pqxx::too_many_connections(message);
          throw pqxx::insufficient_resources(message, query, code);
        }
        break;
      case 'P':
        if (is("P0001")) throw pqxx::plpgsql_raise(message, query, code);
        if (is("P0002")) throw pqxx::plpgsql_no_data_found(message, query, code);
        if (is("P0003")) throw pqxx::plpgsql_too_many_rows(message, query, code);
        if (code[1] == '0') throw pqxx::plpgsql_error(message, query, code);
        break;
    }
  }
  throw pqxx::sql_error(message, query, sqlstate.empty() ? nullptr : code);
}

[[noreturn]] void throw_connection_lost(PGconn* pg) { throw pqxx::broken_connection(PQerrorMessage(pg)); }

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

// The same simple query with libpq's asynchronous API on the connection's own PGconn, the fiber
// suspended on the socket (the I/O thread serves others) instead of a thread blocked in PQexec.
// No deadline of our own: the server-side statement_timeout in the query bounds the call, as in
// the blocking path. Sent once; a connection lost on the way is pqxx::broken_connection and the
// connection reads as closed (PQstatus is CONNECTION_BAD), so its pool drops it.
//
// The socket waits go through `kept` when the connection keeps its registration (a pooled one),
// otherwise through a SocketWatch of the call's own.
//
// `send` queues the call (PQsendQuery, PQsendPrepare or PQsendQueryPrepared; 0 on failure) and
// `query` is its text, for error messages and the result.
template <typename Send>
pqxx::result run_on_fiber(PGconn* pg, const Send& send, const std::string& query, rr::fiber::KeptSocketWatch* kept) {
  constexpr auto no_deadline = std::chrono::steady_clock::time_point::max();
  NonblockingForTheCall nonblocking(pg);
  if (send() == 0) {
    if (PQstatus(pg) == CONNECTION_BAD) throw_connection_lost(pg);
    throw pqxx::failure(PQerrorMessage(pg));
  }
  // This connection's socket as it is now: after a reconnect the same number may name another.
  rr::fiber::SocketIdentity socket{PQsocket(pg), pg, PQbackendPID(pg)};
  std::optional<rr::fiber::SocketWatch> own;
  if (!kept) own.emplace(socket.socket);
  auto wait = [&](bool readable) {
    if (kept) return readable ? kept->wait_readable(socket) : kept->wait_writable(socket);
    readable ? own->wait_readable(no_deadline) : own->wait_writable(no_deadline);
  };
  for (;;) {
    int flushed = PQflush(pg);
    if (flushed == 0) break;
    if (flushed < 0) throw_connection_lost(pg);
    wait(false);
  }
  // The query may hold two statements (SET LOCAL ...; SELECT ...): a result each. The rows are
  // the last tuples result's; an error is the first error result's, thrown once all results are
  // read so the connection is left idle and usable.
  std::optional<pqxx::result> rows;
  std::optional<std::pair<std::string, std::string>> first_error;  // message, SQLSTATE
  for (;;) {
    while (PQisBusy(pg) != 0) {
      wait(true);
      if (PQconsumeInput(pg) == 0) throw_connection_lost(pg);
    }
    PGresult* result = PQgetResult(pg);
    if (result == nullptr) break;
    switch (PQresultStatus(result)) {
      case PGRES_TUPLES_OK:
        rows = rr::db::raw_libpq::adopt(result, query, pg);
        break;
      case PGRES_COMMAND_OK:
      case PGRES_EMPTY_QUERY:
        // What PQexec would return had no statement rows (a tuples result still wins).
        if (!rows) {
          rows = rr::db::raw_libpq::adopt(result, query, pg);
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
  if (first_error) throw_like_libpqxx(first_error->first, first_error->second, query);
  if (!rows) throw pqxx::failure("the call returned no rows result: " + query);
  return std::move(*rows);
}

}  // namespace

namespace detail {

std::optional<std::string> call_argument(double value) {
  char text[32];
  auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

}  // namespace detail

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

pqxx::result run_one_trip_watched(pqxx::connection_base& conn, const Call& call,
                                  std::chrono::milliseconds statement_timeout, rr::fiber::KeptSocketWatch* kept) {
  // A connection libpqxx has not opened yet is escaped for by its own esc(), which opens it first.
  PGconn* open = raw_libpq::connection(conn);
  if (open != nullptr && PQstatus(open) != CONNECTION_OK) open = nullptr;
  std::string query = one_trip_query(call, statement_timeout, [&](std::string& out, const std::string& value) {
    if (open != nullptr) {
      append_escaped(open, out, value);
    } else {
      out += conn.esc(value);
    }
  });
  if (!rr::fiber::active()) return run_blocking(conn, query);
  PGconn* pg = raw_libpq::connection(conn);
  // A connection libpqxx has not (re)opened is left to libpqxx, on a worker, exactly as off a fiber.
  if (pg == nullptr || PQstatus(pg) != CONNECTION_OK) {
    return rr::fiber::blocking([&] { return run_blocking(conn, query); });
  }
  return run_on_fiber(
      pg, [&] { return PQsendQuery(pg, query.c_str()); }, query, kept);
}

// The call as a prepared statement of the session (prepared_calls.hpp): prepared in a round trip
// of its own the first time this session makes it, then executed by name with the arguments as
// text parameters (NULL for none). Like the simple query it runs as one implicit transaction,
// committed at the Sync that ends the execution.
pqxx::result run_prepared_on_fiber(PGconn* pg, PreparedCalls& prepared, const Call& call,
                                   rr::fiber::KeptSocketWatch* kept) {
  const auto arity = call.arguments.size();
  const PreparedCalls::Entry* entry = prepared.find(pg, call.function, arity);
  if (entry == nullptr) {
    auto next = prepared.next(call.function, arity);
    run_on_fiber(
        pg, [&] { return PQsendPrepare(pg, next.name.c_str(), next.sql.c_str(), static_cast<int>(arity), nullptr); },
        next.sql, kept);
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
      entry->sql, kept);
}

}  // namespace

pqxx::result run_one_trip(pqxx::connection_base& conn, const Call& call, std::chrono::milliseconds statement_timeout) {
  return run_one_trip_watched(conn, call, statement_timeout, nullptr);
}

pqxx::result run_one_trip(ConnectionPool::Lease& lease, const Call& call) {
  // A session of our own (prepared-statement mode, which also carries the bound, so there is no
  // SET LOCAL to send: per_transaction_timeout): the call is a prepared statement of the session.
  // Through a transaction-pooling PgBouncer (mode off) it stays the simple query, which needs
  // nothing of the server session it lands on.
  if (lease.statements().mode() == StatementMode::prepared && rr::fiber::active()) {
    PGconn* pg = raw_libpq::connection(lease.conn());
    if (pg != nullptr && PQstatus(pg) == CONNECTION_OK) {
      return run_prepared_on_fiber(pg, lease.pooled().prepared_calls(), call, &lease.pooled().socket_watch());
    }
  }
  return run_one_trip_watched(lease.conn(), call, lease.statement_timeout(), &lease.pooled().socket_watch());
}

bool has_sqlstate(const std::exception& error, std::string_view sqlstate) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error);
  return sql && sql->sqlstate() == sqlstate;
}

}  // namespace rr::db
