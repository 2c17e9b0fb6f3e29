// The signed-in rider of a page request, counted against API_MAX_IN_FLIGHT_PER_USER like the same
// user's API requests: the limit is the user's, whether a bearer token or a session cookie names
// them, so pages are no way around it.
#pragma once

#include <memory>
#include <optional>

#include "common/api/in_flight_per_user.hpp"
#include "common/http/message.hpp"
#include "common/web/session_lookup.hpp"

namespace rr::web {

class SignedInRiders {
 public:
  SignedInRiders(SessionLookup& sessions, api::InFlightPerUser& in_flight)
      : sessions_(sessions), in_flight_(in_flight) {}

  struct Admitted {
    RiderSession session;
    // The rider's in-flight place, held until the last copy goes. A page that defers its request
    // hands it to the deferral (http::keeping_while_parked): a waiting request keeps its place.
    std::shared_ptr<const void> slot;
  };

  // The unexpired session of the request's cookie, with one of its rider's in-flight places;
  // nothing without a session. Throws api::ApiError 429 (Retry-After) when the rider is at the
  // limit, or before any lookup when the address is throttled (SessionLookup::of), which the page
  // boundary answers as a page. A parked request run again keeps the place
  // its first run took (Request::admission) and takes no second one.
  std::optional<Admitted> admit(const http::Request& request);

 private:
  SessionLookup& sessions_;
  api::InFlightPerUser& in_flight_;
};

}  // namespace rr::web
