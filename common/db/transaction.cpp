// Bounded transactions: BEGIN and SET LOCAL statement_timeout in one simple query.
#include "common/db/transaction.hpp"

namespace rr::db {

std::string begin_command(std::chrono::milliseconds statement_timeout) {
  if (statement_timeout.count() <= 0) return "BEGIN";
  return "BEGIN; SET LOCAL statement_timeout = " + std::to_string(statement_timeout.count());
}

Transaction::Transaction(pqxx::connection_base& conn, std::chrono::milliseconds statement_timeout)
    : pqxx::internal::namedclass{"transaction<READ COMMITTED, statement_timeout>"},
      pqxx::internal::basic_transaction(conn, pqxx::isolation_traits<pqxx::read_committed>::name(), pqxx::read_write),
      begin_(begin_command(statement_timeout)) {
  Begin();
}

Transaction::~Transaction() noexcept { End(); }

void Transaction::do_begin() {
  // No automatic retry on a broken connection: the pool drops that connection and the caller
  // decides (a 503, a backoff), as for any other statement.
  direct_exec(begin_.c_str());
}

bool is_statement_timeout(const std::exception& error) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error);
  return sql && sql->sqlstate() == "57014";
}

}  // namespace rr::db
