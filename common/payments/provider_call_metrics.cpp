// Provider call metrics, one place for charges and refunds.
#include "common/payments/provider_call_metrics.hpp"

#include "common/metrics/registry.hpp"

namespace rr::payments {

void record_provider_call(const ProviderCallFamilies& families, const char* outcome,
                          std::chrono::steady_clock::duration took) {
  auto& registry = metrics::default_registry();
  registry.counter(families.calls, families.calls_help, {{"outcome", outcome}}).inc();
  registry.histogram(families.duration, families.duration_help).observe(std::chrono::duration<double>(took).count());
}

}  // namespace rr::payments
