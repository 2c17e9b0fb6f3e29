// What a failed database call means for whoever answers a client: an outage worth retrying soon
// (503 with Retry-After), or something else (a bug, a constraint: 500).
#pragma once

#include <exception>
#include <optional>
#include <string>

namespace rr::db {

// For an outage, the message a client gets; nullopt otherwise. Outages: the connection broke
// (PostgreSQL or PgBouncer restarting), a COMMIT's outcome is unknown because the connection
// broke during it, a statement ran past DATABASE_STATEMENT_TIMEOUT, or the server is failing over
// (a demoted leader refusing writes, a shutdown, a server not yet up), no pooled connection came
// free within the checkout timeout, or the server is out of resources (SQLSTATE class 53). In
// each, a retry with the same Idempotency-Key finds out what happened and carries on.
std::optional<std::string> outage_message(const std::exception& error);

// For a transaction PostgreSQL rolled back because it conflicted with a concurrent one (a
// serialization failure, a deadlock: SQLSTATE class 40 but 40003, which outage_message takes), the
// message a client gets; nullopt otherwise. Nothing of it was written, so the same request again
// is safe and usually passes: an answer to retry soon, never a 500.
std::optional<std::string> conflict_message(const std::exception& error);

}  // namespace rr::db
