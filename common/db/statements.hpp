// Named SQL statements, and how one database session runs them: prepared once per session
// (DATABASE_PREPARED_STATEMENTS=on), or sent unnamed with their parameters every time (off), so
// that a transaction-pooling PgBouncer may hand each transaction a different server session.
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <unordered_set>
#include <utility>

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

// What one session has prepared so far. Lives exactly as long as its connection: a new session
// (a reconnect) starts with nothing prepared.
class SessionStatements {
 public:
  explicit SessionStatements(StatementMode mode) : mode_(mode) {}

  template <typename... Args>
  pqxx::result exec(pqxx::transaction_base& tx, const Statement& statement, Args&&... args) {
    if (mode_ == StatementMode::unnamed) return tx.exec_params(statement.sql, std::forward<Args>(args)...);
    return tx.exec_prepared(prepare(tx.conn(), statement), std::forward<Args>(args)...);
  }

  StatementMode mode() const { return mode_; }

 private:
  // Makes sure `statement` is prepared on `conn`; returns its name.
  const char* prepare(pqxx::connection_base& conn, const Statement& statement);

  StatementMode mode_;
  std::unordered_set<std::string> prepared_;
};

}  // namespace rr::db
