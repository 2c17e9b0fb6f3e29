// Named SQL statements, and how one database session runs them: prepared once per session
// (DATABASE_PREPARED_STATEMENTS=on), or sent unnamed with their parameters every time (off), so
// that a transaction-pooling PgBouncer may hand each transaction a different server session.
// They run on the session's own libpq handle (db::Connection::session()), blocking, inside the
// transaction libpqxx opened on it, and answer a db::Result: the same rows type as a one-trip call.
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <unordered_set>
#include <utility>

#include "common/db/connection.hpp"
#include "common/db/result.hpp"
#include "common/db/sql_arguments.hpp"

namespace rr::db {

// A named SQL statement. Define these as constants next to the code that owns them.
struct Statement {
  const char* name;
  const char* sql;
};

enum class StatementMode {
  prepared,  // PREPARE once per session, then execute by name: the statement is parsed once
  unnamed,   // Parse/Bind/Execute of the unnamed statement in one round trip: no session state
};

// What one session has prepared so far. A new server session (a reconnect) starts with nothing
// prepared.
class SessionStatements {
 public:
  SessionStatements(Connection& conn, StatementMode mode) : conn_(conn), mode_(mode) {}

  // Runs `statement` with `args` (text forms as in sql_arguments.hpp) in `tx`, a transaction on
  // this session. One round trip, plus one to prepare the first time a session runs a statement
  // in prepared mode.
  template <typename... Args>
  Result exec(pqxx::transaction_base& tx, const Statement& statement, const Args&... args) {
    return run(tx, statement, sql_arguments(args...));
  }

  StatementMode mode() const { return mode_; }

 private:
  Result run(pqxx::transaction_base& tx, const Statement& statement, const SqlArguments& arguments);
  // Makes sure `statement` is prepared on `session`; returns its name.
  const char* prepare(PGconn* session, const Statement& statement);

  Connection& conn_;
  StatementMode mode_;
  PGconn* prepared_on_ = nullptr;  // the session prepared_ belongs to, with its server process
  int prepared_server_pid_ = 0;
  std::unordered_set<std::string> prepared_;
};

}  // namespace rr::db
