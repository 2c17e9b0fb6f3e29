// The home page, signed in or out.
#include "common/web/home_page_endpoint.hpp"

#include "common/web/page_boundary.hpp"
#include "common/web/page_response.hpp"
#include "common/web/pages.hpp"
#include "common/web/rider_rides.hpp"
#include "common/web/sign_in_form.hpp"

namespace rr::web {

http::Response HomePageEndpoint::handle(const http::Request& request, const flows::PathArguments&) {
  return within_page_boundary([&] {
    auto rider = riders_.admit(request);
    if (!rider) return sign_in_answer(request, sessions_.settings(), 200);
    const auto& session = rider->session;
    BookingPage shown{session.user.email, session.csrf_token, BookingForm::fresh(), Notice{},
                      recent_rides(pool_, session.user.id)};
    return page(200, booking_page(shown));
  });
}

}  // namespace rr::web
