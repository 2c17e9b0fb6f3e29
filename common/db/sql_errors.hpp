// Failed results on a session of our own, thrown as libpqxx's exception types: every caller
// (db::outage_message, the phase runner's retries, our functions' RR00x codes) tells a broken
// connection, a serialization failure, a deadlock and the rest apart by those types and the
// SQLSTATE, whichever path ran the statement.
#pragma once

#include <libpq-fe.h>

#include <string>

#include "common/db/result.hpp"

namespace rr::db {

// The exception libpqxx 6.4 throws for an error with `sqlstate` (its result::ThrowSQLError):
// pqxx::serialization_failure for 40001, pqxx::unique_violation for 23505, and so on, else
// pqxx::sql_error carrying the SQLSTATE.
[[noreturn]] void throw_sql_error(const std::string& message, const std::string& sqlstate, const std::string& query);

// pqxx::broken_connection with libpq's message for `conn`.
[[noreturn]] void throw_connection_lost(PGconn* conn);

// `result` (owned from here) of `query` on `conn` as a Result when it succeeded. Otherwise it is
// freed and thrown: a session no longer open is pqxx::broken_connection (as libpqxx checks it
// first, whatever the error said), no result at all is pqxx::failure, an error result is
// throw_sql_error.
Result checked_result(PGresult* result, PGconn* conn, const std::string& query);

}  // namespace rr::db
