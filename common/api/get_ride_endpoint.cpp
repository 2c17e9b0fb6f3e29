// One ride of the caller's.
#include "common/api/get_ride_endpoint.hpp"

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/page_query.hpp"
#include "common/rides/ride_reads.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::api {
namespace {

// The route's only argument takes the rest of the path (routes.cpp), so /rides/1/x is a ride
// that cannot exist rather than a route that does not.
std::string_view id_text(const flows::PathArguments& arguments) {
  return arguments.empty() ? std::string_view() : std::string_view(arguments[0]);
}

}  // namespace

void GetRideEndpoint::validate(const http::Request&, const flows::PathArguments& arguments) const {
  parse_ride_id(id_text(arguments));
}

http::Response GetRideEndpoint::handle(const http::Request& request, const flows::PathArguments& arguments) {
  auto user = caller(request);
  auto id = parse_ride_id(id_text(arguments));
  auto rows = read(rides::reads::kRideOfUser, id, user.id);
  if (rows.empty()) throw ApiError(404, "invalid_request_error", "No such ride.");
  return http::Response{200, "application/json", {}, rides::ride_body(rides::ride_view_from(rows[0]))};
}

}  // namespace rr::api
