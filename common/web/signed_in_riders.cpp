// A page's rider and their in-flight place.
#include "common/web/signed_in_riders.hpp"

#include "common/api/outcome_answers.hpp"

namespace rr::web {

std::optional<SignedInRiders::Admitted> SignedInRiders::admit(const http::Request& request) {
  auto found = sessions_.of(request);
  if (!found) return std::nullopt;
  auto& session = found->session;
  // Pages are not counted by the triage (their session needs the database), so an admission on a
  // page request is the one its own first run took before it was parked.
  if (request.admission) return Admitted{std::move(session), request.admission};
  auto slot = in_flight_.try_acquire(session.user.id);
  if (!slot) throw api::too_many_in_flight(in_flight_.limit());
  return Admitted{std::move(session), std::move(slot)};
}

}  // namespace rr::web
