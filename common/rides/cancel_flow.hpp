// The cancel flow (POST /rides/{id}/cancel) as data for the generic runner:
//   started         -> begin_cancel  (where the ride stands; local: commits  -> refund_pending, or
//                                     with the new key)                        finished (200, 404)
//   refund_pending  -> refund        (provider call with the ride's refund   -> finished (200)
//                                     key, then mark the ride cancelled,
//                                     stage the receipt and respond)
// A ride whose own request has not finished is a transient failure (409, nothing stored, not even
// the key): the charge may still be on its way.
#pragma once

#include "common/flow_environment/flow_environment.hpp"
#include "common/idempotency/phase.hpp"

namespace rr::rides {

inline constexpr const char* kRefundPending = "refund_pending";
inline constexpr int kRideNotReadyRetryAfterSeconds = 2;

// Registered in common/flows/flow_registry.cpp for POST /rides/{id}/cancel.
idempotency::Flow make_cancel_flow(const flows::FlowEnvironment& environment);

// The phases, one file each.
idempotency::PhaseResult begin_cancel_phase(idempotency::PhaseContext& ctx, const flows::FlowEnvironment& run);
idempotency::PhaseResult refund_phase(idempotency::PhaseContext& ctx, const flows::FlowEnvironment& run);

}  // namespace rr::rides
