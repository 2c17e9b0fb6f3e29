// One-round-trip function calls: rendering and running the simple query.
#include "common/db/one_trip_call.hpp"

#include "common/db/transaction.hpp"

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

}  // namespace

std::string one_trip_query(const Call& call, std::chrono::milliseconds statement_timeout,
                           const std::function<std::string(const std::string&)>& escape) {
  std::string query;
  query.reserve(64 + call.function.size() + call.arguments.size() * 24);
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
      query += escape(*argument);
      query += '\'';
    } else {
      query += "NULL";
    }
  }
  query += ')';
  return query;
}

pqxx::result run_one_trip(pqxx::connection_base& conn, const Call& call, std::chrono::milliseconds statement_timeout) {
  std::string query =
      one_trip_query(call, statement_timeout, [&conn](const std::string& value) { return conn.esc(value); });
  ImplicitTransaction tx(conn);
  auto rows = tx.exec(query);
  tx.commit();
  return rows;
}

bool has_sqlstate(const std::exception& error, std::string_view sqlstate) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error);
  return sql && sql->sqlstate() == sqlstate;
}

}  // namespace rr::db
