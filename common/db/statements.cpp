// Named statements on the session's own handle: prepared lazily per server session, or unnamed.
#include "common/db/statements.hpp"

#include <stdexcept>
#include <vector>

#include "common/db/sql_errors.hpp"

namespace rr::db {

Result SessionStatements::run(pqxx::transaction_base& tx, const Statement& statement, const SqlArguments& arguments) {
  if (&tx.conn() != &conn_) throw std::logic_error("a session's statement run in another session's transaction");
  PGconn* session = conn_.session();
  if (session == nullptr || PQstatus(session) != CONNECTION_OK) {
    throw pqxx::broken_connection("the database session is closed");
  }
  std::vector<const char*> values;
  values.reserve(arguments.size());
  for (const auto& argument : arguments) values.push_back(argument ? argument->c_str() : nullptr);
  const int count = static_cast<int>(values.size());
  if (mode_ == StatementMode::unnamed) {
    return checked_result(PQexecParams(session, statement.sql, count, nullptr, values.data(), nullptr, nullptr, 0),
                          session, statement.sql);
  }
  const char* name = prepare(session, statement);
  return checked_result(PQexecPrepared(session, name, count, values.data(), nullptr, nullptr, 0), session,
                        statement.sql);
}

const char* SessionStatements::prepare(PGconn* session, const Statement& statement) {
  const int server_pid = PQbackendPID(session);
  if (session != prepared_on_ || server_pid != prepared_server_pid_) {
    prepared_.clear();
    prepared_on_ = session;
    prepared_server_pid_ = server_pid;
  }
  if (prepared_.insert(statement.name).second) {
    try {
      checked_result(PQprepare(session, statement.name, statement.sql, 0, nullptr), session, statement.sql);
    } catch (...) {
      prepared_.erase(statement.name);
      throw;
    }
  }
  return statement.name;
}

}  // namespace rr::db
