// Classification of database failures by what the client can do about them.
#include "common/db/outage.hpp"

#include <pqxx/pqxx>

#include "common/db/transaction.hpp"

namespace rr::db {

std::optional<std::string> outage_message(const std::exception& error) {
  if (dynamic_cast<const pqxx::broken_connection*>(&error)) return "The database is unavailable; retry shortly.";
  if (dynamic_cast<const pqxx::in_doubt_error*>(&error)) {
    return "The database connection was lost while committing; retry with the same Idempotency-Key.";
  }
  if (is_statement_timeout(error)) return "The database is busy; retry shortly.";
  return std::nullopt;
}

}  // namespace rr::db
