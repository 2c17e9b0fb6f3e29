// The rides the rider pages show: the signed-in rider's own, read in a short transaction each.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/db/connection_pool.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::web {

inline constexpr int kRecentRidesShown = 10;

// The user's newest rides, newest first.
std::vector<rides::RideView> recent_rides(db::ConnectionPool& pool, std::int64_t user_id);
// The ride when it is the user's; nothing otherwise (another rider's ride does not exist for them).
std::optional<rides::RideView> ride_of(db::ConnectionPool& pool, std::int64_t user_id, std::int64_t ride_id);

}  // namespace rr::web
