// Phase charge_created -> finished: the receipt is staged in the same transaction that stores the
// response, so a rollback leaks no job. The charge phase does the same in one step.
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_response.hpp"
#include "common/rides/ride_statements.hpp"

namespace rr::rides {

idempotency::PhaseResult send_receipt_phase(idempotency::PhaseContext& ctx, RideRun& run) {
  const auto& key = ctx.key();
  auto staged = ctx.atomic([&](db::Transaction& tx) -> idempotency::PhaseResult {
    auto rows = ctx.exec(tx, statements::kStageReceiptForKey, key.id, kRideAmountCents, kRideCurrency, key.user_id);
    if (rows.empty()) throw std::runtime_error("no ride for key " + std::to_string(key.id));
    return idempotency::FinalResult{201, ride_created_body(ride_view_from(rows[0]))};
  });
  run.jobs_staged();  // the receipt is committed: wake the enqueuer
  return staged;
}

}  // namespace rr::rides
