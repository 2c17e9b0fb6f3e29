// POST /book: the booking form run as the ride flow (the same keys, runner and stored results as
// POST /rides), with the form's hidden idempotency_key as the key, scoped to the session's rider.
// A double click, a resubmission and a Back-then-submit all carry the same key: one ride and one
// charge, and every one of them ends on the same ride page.
#pragma once

#include "common/api/endpoint.hpp"
#include "common/api/flow_endpoint.hpp"
#include "common/web/signed_in_riders.hpp"

namespace rr::web {

class BookEndpoint : public api::Endpoint {
 public:
  BookEndpoint(SignedInRiders& riders, api::FlowEndpoint& flows);
  // 303 to /my/rides/{id} for a ride (first time or replay); 402 with the stored decline and a
  // fresh form; 503 (provider or database unavailable) with the same key to resume; 422 for bad
  // input with the values entered and the same key; 409 while the key is in flight elsewhere (also
  // when the rider holds IDEMPOTENCY_MAX_WAITERS_PER_USER waits already); 429 when the rider has
  // API_MAX_IN_FLIGHT_PER_USER requests in progress; 403 without a session or with a CSRF token
  // that is not the session's (nothing written).
  http::Response handle(const http::Request& request, const flows::PathArguments& arguments) override;

 private:
  SignedInRiders& riders_;
  api::FlowEndpoint& flows_;
  const flows::RegisteredFlow& ride_flow_;  // POST /rides's
};

}  // namespace rr::web
