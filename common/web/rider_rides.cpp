// Reads of the signed-in rider's rides.
#include "common/web/rider_rides.hpp"

#include "common/db/transaction.hpp"

namespace rr::web {
namespace {

const db::Statement kRecentRides{
    "rider_recent_rides", "SELECT " RR_RIDE_VIEW_COLUMNS " FROM rides WHERE user_id = $1 ORDER BY id DESC LIMIT $2"};
const db::Statement kRideOfUser{"rider_ride_of_user",
                                "SELECT " RR_RIDE_VIEW_COLUMNS " FROM rides WHERE id = $1 AND user_id = $2"};

}  // namespace

std::vector<rides::RideView> recent_rides(db::ConnectionPool& pool, std::int64_t user_id) {
  auto conn = pool.acquire();
  db::Transaction tx(conn.conn(), conn.statement_timeout());
  auto rows = conn.exec(tx, kRecentRides, user_id, kRecentRidesShown);
  tx.commit();
  std::vector<rides::RideView> rides;
  for (const auto& row : rows) rides.push_back(rides::ride_view_from(row));
  return rides;
}

std::optional<rides::RideView> ride_of(db::ConnectionPool& pool, std::int64_t user_id, std::int64_t ride_id) {
  auto conn = pool.acquire();
  db::Transaction tx(conn.conn(), conn.statement_timeout());
  auto rows = conn.exec(tx, kRideOfUser, ride_id, user_id);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return rides::ride_view_from(rows[0]);
}

}  // namespace rr::web
