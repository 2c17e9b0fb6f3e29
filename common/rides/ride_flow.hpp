// The ride flow as data for the generic runner: recovery point -> phase.
//   started        -> create_ride   (ride + audit record)            -> ride_created
//   ride_created   -> charge        (provider call, then record it,  -> finished (201 or 402)
//                                    stage the receipt and respond)
//   charge_created -> send_receipt  (stage the receipt, respond)      -> finished
// The charge phase merges "record the charge" with "send receipt" because no foreign call
// separates them; charge_created stays reachable for keys that stopped there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/flows/flow_registry.hpp"
#include "common/idempotency/phase.hpp"
#include "common/payments/stripe_client.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides {

inline constexpr const char* kRideCreated = "ride_created";
inline constexpr const char* kChargeCreated = "charge_created";
inline constexpr std::int64_t kRideAmountCents = 2000;
inline constexpr const char* kRideCurrency = "usd";
inline constexpr int kProviderRetryAfterSeconds = 2;

// Per-run state of one ride request, shared by the flow's phases.
using RideRun = flows::FlowEnvironment;

// Registered in common/flows/flow_registry.cpp for POST /rides.
idempotency::Flow make_ride_flow(const flows::FlowEnvironment& environment);

// The phases, one file each.
idempotency::PhaseResult create_ride_phase(idempotency::PhaseContext& ctx, RideRun& run);
idempotency::PhaseResult charge_phase(idempotency::PhaseContext& ctx, RideRun& run);
idempotency::PhaseResult send_receipt_phase(idempotency::PhaseContext& ctx, RideRun& run);

}  // namespace rr::rides
