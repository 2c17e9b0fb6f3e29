// JSON bodies of the rides API: a ride, the 201 and lists (errors: common/base/error_body.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include "common/db/result.hpp"

namespace rr::rides {

struct RideView {
  std::int64_t id = 0;
  std::string origin_lat, origin_lon, target_lat, target_lon;  // JSON number text
  std::optional<std::string> stripe_charge_id;
  std::string created_at;                   // RFC 3339, UTC
  std::optional<std::string> cancelled_at;  // RFC 3339, UTC; null until cancelled
  std::optional<std::string> stripe_refund_id;
};

// The columns every ride query selects, in RideView's order. The functions of
// sql/functions/ that return a ride spell the same expressions (schema_test checks
// that a ride reads the same both ways).
#define RR_RIDE_VIEW_COLUMNS                                                           \
  "id, origin_lat::float8::text, origin_lon::float8::text, target_lat::float8::text, " \
  "target_lon::float8::text, stripe_charge_id, "                                       \
  "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "      \
  "to_char(cancelled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), stripe_refund_id"

RideView ride_view_from(const db::Row& row);

std::string ride_created_body(const RideView& ride);
// The stored-answer renderer (sql/019) that renders ride_created_body's bytes back from a ride:
// a finished POST /rides key whose 201 is stored as NULL names it, and its replay is rendered by
// it for as long as the key lives (rides_created_answer_v1, frozen, and tests/golden/). A change
// of ride_created_body's bytes needs a new renderer beside it, not an edit of this one.
inline constexpr int kCreatedAnswerRenderer = 1;
// The ride first in a row, from the first column on.
RideView ride_view_from(const db::Row& row, db::Row::size_type first_column);
std::string ride_body(const RideView& ride);
std::string ride_list_body(const std::vector<RideView>& rides, std::optional<std::int64_t> next_cursor);

}  // namespace rr::rides
