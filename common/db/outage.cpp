// Classification of database failures by what the client can do about them.
#include "common/db/outage.hpp"

#include <pqxx/pqxx>

#include "common/db/connection_pool.hpp"
#include "common/db/transaction.hpp"

namespace rr::db {
namespace {

// SQLSTATEs a failover or restart of PostgreSQL raises on a live connection: a demoted leader
// refusing writes (25006, while the balancer has not yet cut its sessions), a server shutting
// down (57P01 admin, 57P02 crash) or not yet accepting sessions (57P03). All pass with the
// failover: a retry reaches the new leader.
bool is_failover_state(const std::exception& error) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error);
  if (!sql) return false;
  const std::string& state = sql->sqlstate();
  // The rest of class 57 (an operator's intervention, a dropped database) passes the same way.
  return state == "25006" || state.rfind("57", 0) == 0;
}

// SQLSTATE class 53: the server is out of connections, memory or disk. It passes when load falls
// or an operator acts; the request itself is not at fault.
bool is_out_of_resources(const std::exception& error) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error);
  return sql && sql->sqlstate().rfind("53", 0) == 0;
}

}  // namespace

std::optional<std::string> outage_message(const std::exception& error) {
  if (dynamic_cast<const pqxx::broken_connection*>(&error)) return "The database is unavailable; retry shortly.";
  if (dynamic_cast<const pqxx::in_doubt_error*>(&error)) {
    return "The database connection was lost while committing; retry with the same Idempotency-Key.";
  }
  if (is_statement_timeout(error)) return "The database is busy; retry shortly.";
  if (is_failover_state(error)) return "The database is failing over; retry shortly with the same Idempotency-Key.";
  if (dynamic_cast<const PoolExhausted*>(&error)) return "The service is busy; retry shortly.";
  if (is_out_of_resources(error)) return "The database is out of resources; retry shortly.";
  return std::nullopt;
}

std::optional<std::string> conflict_message(const std::exception& error) {
  if (outage_message(error)) return std::nullopt;
  if (!dynamic_cast<const pqxx::transaction_rollback*>(&error)) return std::nullopt;
  // 40003 is no conflict: the statement may have been done (the batch classifier's outage).
  if (dynamic_cast<const pqxx::statement_completion_unknown*>(&error)) return std::nullopt;
  return "The request met a concurrent one and was not done; retry with the same Idempotency-Key.";
}

}  // namespace rr::db
