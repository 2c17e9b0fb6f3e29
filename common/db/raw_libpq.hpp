// libpq's own handles behind a libpqxx connection and result, for the one place that drives libpq
// directly: a one-trip call on a request fiber (one_trip_call.cpp) sends its query with libpq's
// asynchronous API so the fiber can suspend on the socket, and hands back a real pqxx::result.
#pragma once

#include <libpq-fe.h>

#include <pqxx/pqxx>
#include <string>

namespace rr::db::raw_libpq {

// The PGconn of `conn` (null before it connected). Its state stays libpqxx's: whoever uses it
// leaves it as found (blocking mode, no pending results).
PGconn* connection(const pqxx::connection_base& conn);

// Wraps `result` (ownership passes to the pqxx::result) as libpqxx would for `query`, with the
// connection's client encoding so fields read the same as from a blocking exec.
pqxx::result adopt(PGresult* result, const std::string& query, PGconn* conn);

}  // namespace rr::db::raw_libpq
