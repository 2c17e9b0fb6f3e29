// The ride each idempotency key made, read by key id in one statement.
#include "api/key_rides.hpp"

#include "common/db/transaction.hpp"

namespace rr::api {
namespace {

// $1 key ids, comma-separated (integers only, written by rides_of_keys).
const db::Statement kRidesOfKeys{"ops_rides_of_keys",
                                 "SELECT idempotency_key_id, id, stripe_charge_id FROM rides "
                                 "WHERE idempotency_key_id = ANY (string_to_array($1, ',')::bigint[])"};

}  // namespace

std::map<std::int64_t, KeyRide> rides_of_keys(db::PooledConnection& conn, const std::vector<std::int64_t>& key_ids) {
  std::map<std::int64_t, KeyRide> rides;
  if (key_ids.empty()) return rides;
  std::string ids;
  for (auto id : key_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  db::Transaction tx(conn.raw(), conn.statement_timeout());
  auto rows = conn.statements().exec(tx, kRidesOfKeys, ids);
  tx.commit();
  for (const auto& row : rows) {
    KeyRide ride;
    ride.ride_id = row[1].as<std::int64_t>();
    if (!row[2].is_null()) ride.stripe_charge_id = row[2].as<std::string>();
    rides.emplace(row[0].as<std::int64_t>(), std::move(ride));
  }
  return rides;
}

}  // namespace rr::api
