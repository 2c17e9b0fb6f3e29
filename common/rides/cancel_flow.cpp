// Wires the cancel phases into a flow table.
#include "common/rides/cancel_flow.hpp"

#include <memory>

namespace rr::rides {

idempotency::Flow make_cancel_flow(const flows::FlowEnvironment& environment) {
  auto run = std::make_shared<flows::FlowEnvironment>(environment);
  return {
      // Local (database work only): a new key and the ride's check commit together, and a ride
      // that cannot be cancelled yet leaves no key behind.
      {idempotency::kStarted,
       idempotency::local_phase([run](idempotency::PhaseContext& ctx) { return begin_cancel_phase(ctx, *run); })},
      {kRefundPending, [run](idempotency::PhaseContext& ctx) { return refund_phase(ctx, *run); }},
  };
}

}  // namespace rr::rides
