// The metrics of one call to the payment provider: a counter by outcome and a duration histogram,
// under the family names of its operation. Charges and refunds keep families of their own (the
// alert rules in deploy/prometheus-alerts.yml read the charge families by name).
#pragma once

#include <chrono>

namespace rr::payments {

struct ProviderCallFamilies {
  const char* calls;
  const char* calls_help;
  const char* duration;
  const char* duration_help;
};

inline constexpr ProviderCallFamilies kChargeCallFamilies{
    "rocket_rides_provider_calls_total", "Payment provider charge calls by outcome.",
    "rocket_rides_provider_call_duration_seconds", "Payment provider charge call duration."};
inline constexpr ProviderCallFamilies kRefundCallFamilies{
    "rocket_rides_provider_refund_calls_total", "Payment provider refund calls by outcome.",
    "rocket_rides_provider_refund_call_duration_seconds", "Payment provider refund call duration."};

// Counts the call under `outcome` and records how long it took.
void record_provider_call(const ProviderCallFamilies& families, const char* outcome,
                          std::chrono::steady_clock::duration took);

}  // namespace rr::payments
