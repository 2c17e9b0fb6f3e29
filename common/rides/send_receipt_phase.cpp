// Phase charge_created -> finished, and the receipt staging it shares with the charge phase: the
// job is staged in the same transaction that stores the response, so a rollback leaks no job.
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides {
namespace {

const db::Statement kStageReceipt{
    "rides_stage_receipt",
    "INSERT INTO staged_jobs (job_name, job_args) "
    "VALUES ('send_ride_receipt', jsonb_build_array(jsonb_build_object("
    "'amount', $1::bigint, 'currency', $2::text, 'user_id', $3::bigint, 'ride_id', $4::bigint)))"};
const db::Statement kRideByKey{"rides_by_key",
                               "SELECT " RR_RIDE_VIEW_COLUMNS " FROM rides WHERE idempotency_key_id = $1"};

}  // namespace

idempotency::Response stage_receipt_and_respond(idempotency::PhaseContext& ctx, pqxx::work& tx, const RideView& ride,
                                                std::int64_t user_id) {
  tx.exec_prepared(ctx.prepare(kStageReceipt), kRideAmountCents, kRideCurrency, user_id, ride.id);
  return idempotency::Response{201, ride_created_body(ride)};
}

idempotency::PhaseResult send_receipt_phase(idempotency::PhaseContext& ctx, RideRun&) {
  const auto& key = ctx.key();
  return ctx.atomic([&](pqxx::work& tx) -> idempotency::PhaseResult {
    auto rows = tx.exec_prepared(ctx.prepare(kRideByKey), key.id);
    if (rows.empty()) throw std::runtime_error("no ride for key " + std::to_string(key.id));
    return stage_receipt_and_respond(ctx, tx, ride_view_from(rows[0]), key.user_id);
  });
}

}  // namespace rr::rides
