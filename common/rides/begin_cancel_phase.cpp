// Phase started -> refund_pending (or finished): where the caller's ride stands. Another user's
// ride or none is a stored 404; an already cancelled ride is answered as it is (no second refund);
// a ride whose request finished without a charge is cancelled here with nothing to refund; a ride
// whose charge may still come is retried later.
#include <stdexcept>

#include "common/base/error_body.hpp"
#include "common/rides/cancel_flow.hpp"
#include "common/rides/cancel_params.hpp"
#include "common/rides/cancel_statements.hpp"
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_response.hpp"

namespace rr::rides {

idempotency::PhaseResult begin_cancel_phase(idempotency::PhaseContext& ctx, const flows::FlowEnvironment&) {
  const auto& key = ctx.key();
  auto params = cancel_params_from_json(key.request_params);
  if (!params) throw std::runtime_error("stored request_params of key " + std::to_string(key.id) + " are unreadable");
  return ctx.atomic([&](db::Transaction& tx) -> idempotency::PhaseResult {
    std::string ip = key.origin_ip.empty() ? "0.0.0.0" : key.origin_ip;
    auto rows = ctx.exec(tx, statements::kCancelBegin, params->ride_id, key.user_id, params->reason, kRideCurrency,
                         key.request_params, ip);
    if (rows.empty()) return idempotency::FinalResult{404, error_body("invalid_request_error", "No such ride.")};
    auto state = rows[0][0].as<std::string>();
    if (state == "charged") return idempotency::RecoveryPoint{kRefundPending};
    if (state == "pending") {
      throw idempotency::TransientFailure(idempotency::RetryReason::not_ready,
                                          "The ride's own request has not finished; retry the cancellation later.",
                                          kRideNotReadyRetryAfterSeconds);
    }
    // cancelled (by any key) or uncharged (cancelled just now): the ride as it is.
    return idempotency::FinalResult{200, ride_body(ride_view_from(rows[0], 1))};
  });
}

}  // namespace rr::rides
