// The ride each idempotency key made, for the operator's key commands (`keys show`, `keys list`):
// the idempotency layer's key inspection knows no flow's tables, so the one command that shows a
// key beside what its flow wrote asks the rides table itself.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/db/connection_pool.hpp"

namespace rr::api {

struct KeyRide {
  std::int64_t ride_id = 0;
  std::optional<std::string> stripe_charge_id;  // none until the charge is recorded
};

// By key id; a key that made no ride (yet, or ever: a cancel's key) has no entry. One statement
// in a short transaction, in the session's statement mode (works through PgBouncer).
std::map<std::int64_t, KeyRide> rides_of_keys(db::PooledConnection& conn, const std::vector<std::int64_t>& key_ids);

}  // namespace rr::api
