// Bounded transactions: BEGIN and SET LOCAL statement_timeout in one simple query.
#include "common/db/transaction.hpp"

#include <string>

namespace rr::db {

namespace {

// libpqxx 6.4 starts a transaction with "BEGIN; SET TRANSACTION ISOLATION LEVEL <this>" (a single
// simple query) whenever the isolation text is not plain READ COMMITTED: appending the SET LOCAL
// to it costs no round trip. transaction_test checks that the bound really holds, so a libpqxx
// that builds its BEGIN differently fails there, not silently in production.
std::string read_committed_with(std::chrono::milliseconds statement_timeout) {
  std::string isolation = pqxx::isolation_traits<pqxx::read_committed>::name();
  if (statement_timeout.count() > 0) {
    isolation += "; SET LOCAL statement_timeout = " + std::to_string(statement_timeout.count());
  }
  return isolation;
}

}  // namespace

Transaction::Transaction(pqxx::connection_base& conn, std::chrono::milliseconds statement_timeout)
    : pqxx::internal::namedclass{"transaction<READ COMMITTED, statement_timeout>"},
      pqxx::internal::basic_transaction(conn, read_committed_with(statement_timeout), pqxx::read_write) {
  Begin();
}

Transaction::~Transaction() noexcept { End(); }

bool is_statement_timeout(const std::exception& error) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error);
  return sql && sql->sqlstate() == "57014";
}

}  // namespace rr::db
