// A page of the caller's rides.
#include "common/api/list_rides_endpoint.hpp"

#include "common/api_requests/page_query.hpp"
#include "common/rides/ride_reads.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::api {
void ListRidesEndpoint::validate(const http::Request& request, const flows::PathArguments&) const {
  parse_page_query(request);
}

http::Response ListRidesEndpoint::handle(const http::Request& request, const flows::PathArguments&) {
  auto user = caller(request);
  auto [limit, cursor] = parse_page_query(request);
  // One extra row tells whether there is a next page.
  auto rows = read(rides::reads::kRidesPage, user.id, cursor, limit + 1);
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
