// The ride page.
#include "common/web/ride_page_endpoint.hpp"

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/page_query.hpp"
#include "common/web/page_boundary.hpp"
#include "common/web/page_response.hpp"
#include "common/web/pages.hpp"
#include "common/web/rider_rides.hpp"

namespace rr::web {

http::Response RidePageEndpoint::handle(const http::Request& request, const flows::PathArguments& arguments) {
  return within_page_boundary([&] {
    auto not_found = [] {
      return page(404, message_page("No such ride", "No such ride of yours. Are you signed in?"));
    };
    // The route's argument takes the rest of the path (routes.cpp): /my/rides/1/x is no ride.
    std::int64_t id = 0;
    try {
      id = api::parse_ride_id(arguments.empty() ? std::string_view() : std::string_view(arguments[0]));
    } catch (const api::ApiError&) {
      return not_found();
    }
    auto rider = riders_.admit(request);
    if (!rider) return not_found();
    const auto& session = rider->session;
    auto ride = ride_of(pool_, session.user.id, id);
    if (!ride) return not_found();
    return page(200, ride_page(*ride, session.user.email, session.csrf_token));
  });
}

}  // namespace rr::web
