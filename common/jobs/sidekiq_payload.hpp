// The JSON a Sidekiq 8 worker pops from queue:<name>, built from a staged_jobs row.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rr::jobs {

// One claimed staged_jobs row, as the enqueuer reads it.
struct StagedJob {
  std::int64_t id = 0;
  std::string job_name;            // e.g. "send_ride_receipt"
  std::string args_json;           // job_args::text, always a JSON array (the schema checks it)
  std::string jid;                 // 24 lowercase hex characters, fixed at staging
  std::int64_t created_at_ms = 0;  // epoch milliseconds
};

// The worker class for a job name, following Rails' camelize plus Sidekiq's "Job" suffix:
// each '_'-separated word is capitalized and the underscores dropped, '/' becomes a Ruby
// namespace separator '::', and "Job" is appended unless the name already ends in it.
//   send_ride_receipt        -> SendRideReceiptJob
//   billing/refund_charge    -> Billing::RefundChargeJob
//   send_ride_receipt_job    -> SendRideReceiptJob
// Other characters are kept as they are: a strange name still reaches Redis, where the worker
// reports it, rather than blocking the queue here.
std::string sidekiq_class_name(std::string_view job_name);

// {"class":..,"args":<args_json verbatim>,"jid":..,"queue":..,"retry":true,
//  "created_at":<ms>,"enqueued_at":<ms>} — Sidekiq 8 writes both times as integer epoch ms.
std::string sidekiq_payload(const StagedJob& job, std::string_view queue, std::int64_t enqueued_at_ms);

}  // namespace rr::jobs
