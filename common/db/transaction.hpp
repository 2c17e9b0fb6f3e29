// The one kind of transaction the suite runs: READ COMMITTED, read-write, and every statement in
// it bounded by statement_timeout (DATABASE_STATEMENT_TIMEOUT). The bound is set with SET LOCAL, so
// it lives exactly as long as the transaction (also on a server session a transaction-pooling
// PgBouncer hands to someone else next), and it travels in the same round trip as BEGIN.
#pragma once

#include <chrono>
#include <exception>
#include <pqxx/pqxx>
#include <string>

namespace rr::db {

// What starts every transaction: "BEGIN; SET LOCAL statement_timeout = <ms>", one simple query
// (plain "BEGIN" when the bound is zero, meaning none). The benchmark's pgbench script sends the
// same.
std::string begin_command(std::chrono::milliseconds statement_timeout);

class Transaction : public pqxx::internal::basic_transaction {
 public:
  // `statement_timeout` of zero means no bound.
  Transaction(pqxx::connection_base& conn, std::chrono::milliseconds statement_timeout);
  ~Transaction() noexcept override;

 private:
  // libpqxx's extension point for how a transaction starts (its own sends "BEGIN").
  void do_begin() override;

  std::string begin_;
};

// The statement ran past its bound (SQLSTATE 57014, query_canceled): the database is too busy or
// something holds a lock too long. Nothing of the transaction committed; worth retrying later.
bool is_statement_timeout(const std::exception& error);

}  // namespace rr::db
