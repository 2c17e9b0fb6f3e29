// The ride flow as data for the generic runner: recovery point -> phase.
//   started        -> create_ride   (ride + audit record)            -> ride_created
//   ride_created   -> charge        (provider call, then record it,  -> finished (201 or 402)
//                                    stage the receipt and respond)
//   charge_created -> send_receipt  (stage the receipt, respond)      -> finished
// A new key is created together with its ride in one round trip (create_ride_call), and a charge
// is recorded together with the response in another (charge_phase). The key's provider key is
// derived from the client's request when the key is created (payments::charge_provider_key), so a
// key row recreated after a lost commit charges under the same provider key as the lost one.
// The charge phase merges "record the charge" with "send receipt" because no foreign call
// separates them; charge_created stays reachable for keys that stopped there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/flow_environment/flow_environment.hpp"
#include "common/idempotency/phase.hpp"
#include "common/payments/stripe_client.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides {

inline constexpr const char* kRideCreated = "ride_created";
inline constexpr const char* kChargeCreated = "charge_created";
inline constexpr std::int64_t kRideAmountCents = 2000;
inline constexpr const char* kRideCurrency = "usd";
inline constexpr int kProviderRetryAfterSeconds = 2;
// The charge's description at the provider: nothing of a key row in it (see charge_phase).
inline constexpr const char* kChargeDescription = "Rocket Rides ride";

// Per-run state of one ride request, shared by the flow's phases.
using RideRun = flows::FlowEnvironment;

// Registered in common/flows/flow_registry.cpp for POST /rides.
idempotency::Flow make_ride_flow(const flows::FlowEnvironment& environment);

// The phases, one file each.
idempotency::PhaseResult create_ride_phase(idempotency::PhaseContext& ctx, RideRun& run);
// create_ride_phase and the key's creation as one call (idempotency::CreatingCall); carries the new
// ride, as a response shows it, to the charge phase. A new key stores `payment_idempotency_key`
// (the flow passes payments::charge_provider_key of the request), which every charge attempt sends.
db::Call create_ride_call(const idempotency::KeyRequest& request, const std::string& lock_token,
                          double lock_timeout_seconds, const std::string& payment_idempotency_key);
idempotency::PhaseResult charge_phase(idempotency::PhaseContext& ctx, RideRun& run);
// The charge phase's section after a successful charge, for a new key and a resumed one alike:
// records `charge_id` on the key's ride, stages the receipt and stores `created` (rendered from the
// ride create_ride_call carried, or the one read for a resumed key), fenced on the key's lock, in
// one call.
db::Call record_charge_call(const idempotency::KeyRow& key, const std::string& charge_id,
                            const idempotency::FinalResult& created);
idempotency::PhaseResult send_receipt_phase(idempotency::PhaseContext& ctx, RideRun& run);

}  // namespace rr::rides
