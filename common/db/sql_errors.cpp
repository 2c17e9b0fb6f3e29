// libpq's error results as libpqxx's exceptions.
#include "common/db/sql_errors.hpp"

#include <pqxx/pqxx>

namespace rr::db {

[[noreturn]] void throw_sql_error(const std::string& message, const std::string& sqlstate, const std::string& query) {
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

void throw_connection_lost(PGconn* conn) { throw pqxx::broken_connection(PQerrorMessage(conn)); }

Result checked_result(PGresult* result, PGconn* conn, const std::string& query) {
  const ExecStatusType status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) return Result(result);
  std::string message = result ? PQresultErrorMessage(result) : "";
  const char* sqlstate = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string state = sqlstate ? sqlstate : "";
  const bool had_result = result != nullptr;
  PQclear(result);
  if (PQstatus(conn) != CONNECTION_OK) throw_connection_lost(conn);
  if (!had_result) throw pqxx::failure(PQerrorMessage(conn));
  throw_sql_error(message, state, query);
}

}  // namespace rr::db
