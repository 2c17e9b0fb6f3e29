// The JSON a Sidekiq worker pops from queue:<name>, built from a staged_jobs row.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rr::jobs {

// How the payload writes created_at and enqueued_at (SIDEKIQ_TIMESTAMPS).
enum class SidekiqTimestamps {
  // Float epoch seconds with six decimals, always with a decimal point (1763829000.123456): what
  // Sidekiq up to 7 writes and reads, and what Sidekiq 8 still reads as the old form (it tells
  // the two apart by type). The one form every version reads right.
  seconds,
  // Integer epoch milliseconds (1763829000123): Sidekiq 8's native form, which Sidekiq 6 and 7
  // read as seconds (a latency of minus 56,000 years).
  milliseconds,
};

// One claimed staged_jobs row, as the enqueuer reads it.
struct StagedJob {
  std::int64_t id = 0;
  std::string job_name;            // e.g. "send_ride_receipt"
  std::string args_json;           // job_args::text, always a JSON array (the schema checks it)
  std::string jid;                 // 24 lowercase hex characters, fixed at staging
  std::int64_t created_at_us = 0;  // epoch microseconds, PostgreSQL's own precision
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

// An epoch time in microseconds as the payload writes it: "1763829000.123456" (seconds) or
// "1763829000123" (milliseconds, rounded down as Sidekiq 8's clock_gettime(:millisecond) does).
std::string sidekiq_timestamp(std::int64_t epoch_us, SidekiqTimestamps form);

// {"class":..,"args":<args_json verbatim>,"jid":..,"queue":..,"retry":true,
//  "created_at":<time>,"enqueued_at":<time>}, the times in the given form.
std::string sidekiq_payload(const StagedJob& job, std::string_view queue, std::int64_t enqueued_at_us,
                            SidekiqTimestamps timestamps);

}  // namespace rr::jobs
