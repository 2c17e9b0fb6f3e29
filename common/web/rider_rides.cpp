// Reads of the signed-in rider's rides.
#include "common/web/rider_rides.hpp"

#include "common/db/transaction.hpp"
#include "common/rides/ride_reads.hpp"

namespace rr::web {
std::vector<rides::RideView> recent_rides(db::ConnectionPool& pool, std::int64_t user_id) {
  auto conn = pool.acquire();
  db::Transaction tx(conn.conn(), conn.statement_timeout());
  auto rows = conn.exec(tx, rides::reads::kRidesPage, user_id, std::optional<std::int64_t>{}, kRecentRidesShown);
  tx.commit();
  std::vector<rides::RideView> rides;
  for (const auto& row : rows) rides.push_back(rides::ride_view_from(row));
  return rides;
}

std::optional<rides::RideView> ride_of(db::ConnectionPool& pool, std::int64_t user_id, std::int64_t ride_id) {
  auto conn = pool.acquire();
  db::Transaction tx(conn.conn(), conn.statement_timeout());
  auto rows = conn.exec(tx, rides::reads::kRideOfUser, ride_id, user_id);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return rides::ride_view_from(rows[0]);
}

}  // namespace rr::web
