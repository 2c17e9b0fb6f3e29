// Wires the ride phases into a flow table.
#include "common/rides/ride_flow.hpp"

#include <memory>

namespace rr::rides {

idempotency::Flow make_ride_flow(const flows::FlowEnvironment& environment) {
  auto run = std::make_shared<RideRun>(environment);
  // Local (database work only): a new key and its ride commit together, in one round trip.
  auto create_ride =
      idempotency::local_phase([run](idempotency::PhaseContext& ctx) { return create_ride_phase(ctx, *run); });
  create_ride.create_call = create_ride_call;
  return {
      {idempotency::kStarted, std::move(create_ride)},
      {kRideCreated, [run](idempotency::PhaseContext& ctx) { return charge_phase(ctx, *run); }},
      {kChargeCreated, [run](idempotency::PhaseContext& ctx) { return send_receipt_phase(ctx, *run); }},
  };
}

}  // namespace rr::rides
