// A coalesced batch's failure by what its requests can do about it.
#include "common/db/batch_failure.hpp"

#include <pqxx/pqxx>
#include <string>

#include "common/db/outage.hpp"

namespace rr::db {

BatchFailure classify_batch_failure(const std::exception& error) {
  // Whether the batch committed is unknown (40003): like a connection lost during a commit.
  if (outage_message(error) || dynamic_cast<const pqxx::statement_completion_unknown*>(&error)) {
    return BatchFailure::outage;
  }
  // libpqxx makes these without their SQLSTATE (sql_errors.cpp), so by type: 40001, 40P01, 40000.
  if (dynamic_cast<const pqxx::transaction_rollback*>(&error)) return BatchFailure::conflict;
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error)) {
    const std::string& state = sql->sqlstate();
    if (state.rfind("22", 0) == 0 || state.rfind("23", 0) == 0) return BatchFailure::member_refused;
  }
  return BatchFailure::programming_error;
}

}  // namespace rr::db
