// GET /rides and GET /rides/{id}: the caller's own rides only; anyone else's is a 404.
#include "common/api/api_error.hpp"
#include "common/api/app.hpp"
#include "common/api/page_query.hpp"
#include "common/api/request_parsing.hpp"
#include "common/config/environment.hpp"
#include "common/db/transaction.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::api {
namespace {

const db::Statement kRideById{"rides_by_id",
                              "SELECT " RR_RIDE_VIEW_COLUMNS " FROM rides WHERE id = $1 AND user_id = $2"};
const db::Statement kRidesPage{"rides_page",
                               "SELECT " RR_RIDE_VIEW_COLUMNS
                               " FROM rides WHERE user_id = $1 AND ($2::bigint IS NULL OR id < $2::bigint) "
                               "ORDER BY id DESC LIMIT $3"};

}  // namespace

http::Response App::get_ride(const http::Request& request, std::string_view id_text) {
  auto user = authenticate(request);
  auto id = parse_ride_id(id_text);
  auto conn = pool_.acquire();
  db::Transaction tx(conn.conn(), conn.statement_timeout());
  auto rows = conn.exec(tx, kRideById, id, user.id);
  tx.commit();
  if (rows.empty()) throw ApiError(404, "invalid_request_error", "No such ride.");
  return http::Response{200, "application/json", {}, rides::ride_body(rides::ride_view_from(rows[0]))};
}

http::Response App::list_rides(const http::Request& request) {
  auto user = authenticate(request);
  auto [limit, cursor] = parse_page_query(request);
  auto conn = pool_.acquire();
  db::Transaction tx(conn.conn(), conn.statement_timeout());
  // One extra row tells whether there is a next page.
  auto rows = conn.exec(tx, kRidesPage, user.id, cursor, limit + 1);
  tx.commit();
  std::vector<rides::RideView> page;
  for (const auto& row : rows) {
    if (static_cast<std::int64_t>(page.size()) == limit) break;
    page.push_back(rides::ride_view_from(row));
  }
  std::optional<std::int64_t> next;
  if (static_cast<std::int64_t>(rows.size()) > limit && !page.empty()) next = page.back().id;
  return http::Response{200, "application/json", {}, rides::ride_list_body(page, next)};
}

}  // namespace rr::api
