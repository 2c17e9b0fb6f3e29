// Phase charge_created -> finished, and the receipt staging it shares with the charge phase: the
// job is staged in the same transaction that stores the response, so a rollback leaks no job.
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides {
namespace {

const char* const kStageReceipt =
    "INSERT INTO staged_jobs (job_name, job_args) "
    "VALUES ('send_ride_receipt', jsonb_build_array(jsonb_build_object("
    "'amount', $1::bigint, 'currency', $2::text, 'user_id', $3::bigint, 'ride_id', $4::bigint)))";

}  // namespace

idempotency::Response stage_receipt_and_respond(pqxx::work& tx, std::int64_t key_id, std::int64_t user_id) {
  auto ride = load_ride_by_key(tx, key_id);
  if (!ride) throw std::runtime_error("no ride for key " + std::to_string(key_id));
  tx.exec_params(kStageReceipt, kRideAmountCents, kRideCurrency, user_id, ride->id);
  return idempotency::Response{201, ride_created_body(*ride)};
}

idempotency::PhaseResult send_receipt_phase(idempotency::PhaseContext& ctx, RideRun&) {
  const auto& key = ctx.key();
  return ctx.atomic(
      [&](pqxx::work& tx) -> idempotency::PhaseResult { return stage_receipt_and_respond(tx, key.id, key.user_id); });
}

}  // namespace rr::rides
