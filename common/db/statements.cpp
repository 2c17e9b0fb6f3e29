// Lazy per-session preparation of named statements.
#include "common/db/statements.hpp"

namespace rr::db {

const char* SessionStatements::prepare(pqxx::connection_base& conn, const Statement& statement) {
  if (prepared_.insert(statement.name).second) {
    try {
      conn.prepare(statement.name, statement.sql);
    } catch (...) {
      prepared_.erase(statement.name);
      throw;
    }
  }
  return statement.name;
}

}  // namespace rr::db
