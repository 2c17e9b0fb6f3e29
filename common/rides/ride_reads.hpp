// The reads of a user's rides, as responses and pages show them (RR_RIDE_VIEW_COLUMNS): shared by
// the API's GET /rides and GET /rides/{id} and by the rider pages, so each is one prepared
// statement per session, not one per caller.
#pragma once

#include "common/db/statements.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides::reads {

// One ride when it is the user's; no row otherwise.
//   $1 ride id  $2 user id
inline constexpr db::Statement kRideOfUser{"rides_by_id",
                                           "SELECT " RR_RIDE_VIEW_COLUMNS " FROM rides WHERE id = $1 AND user_id = $2"};

// The user's rides, newest first, below a cursor.
//   $1 user id  $2 cursor (a ride id, or NULL for the newest)  $3 limit
inline constexpr db::Statement kRidesPage{"rides_page",
                                          "SELECT " RR_RIDE_VIEW_COLUMNS
                                          " FROM rides WHERE user_id = $1 AND ($2::bigint IS NULL OR id < $2::bigint) "
                                          "ORDER BY id DESC LIMIT $3"};

}  // namespace rr::rides::reads
