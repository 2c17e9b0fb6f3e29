// Wires the ride phases into a flow table.
#include "common/rides/ride_flow.hpp"

#include <memory>

#include "common/payments/provider_key.hpp"

namespace rr::rides {

idempotency::Flow make_ride_flow(const flows::FlowEnvironment& environment) {
  auto run = std::make_shared<RideRun>(environment);
  // Local (database work only): a new key and its ride commit together, in one round trip.
  auto create_ride =
      idempotency::local_phase([run](idempotency::PhaseContext& ctx) { return create_ride_phase(ctx, *run); });
  create_ride.create_call = [run](const idempotency::KeyRequest& request, const std::string& lock_token,
                                  double lock_timeout_seconds) {
    return create_ride_call(request, lock_token, lock_timeout_seconds,
                            payments::charge_provider_key(run->stripe.settings().provider_key_secret, request.user_id,
                                                          request.idempotency_key));
  };
  return {
      {idempotency::kStarted, std::move(create_ride)},
      {kRideCreated, [run](idempotency::PhaseContext& ctx) { return charge_phase(ctx, *run); }},
      {kChargeCreated, [run](idempotency::PhaseContext& ctx) { return send_receipt_phase(ctx, *run); }},
  };
}

}  // namespace rr::rides
