// Full-jitter exponential backoff.
#include "common/daemon/backoff.hpp"

#include <algorithm>

namespace rr::daemon {

Backoff::Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap, std::uint64_t seed)
    : base_(std::max(base, std::chrono::milliseconds{1})), cap_(std::max(cap, base_)), rng_(seed) {}

std::chrono::milliseconds Backoff::ceiling() const {
  if (failures_ == 0) return std::chrono::milliseconds{0};
  // Doubling stops once past the cap, so a long outage cannot overflow the shift.
  std::int64_t bound = base_.count();
  for (int i = 1; i < failures_ && bound < cap_.count(); ++i) bound *= 2;
  return std::min(std::chrono::milliseconds{bound}, cap_);
}

std::chrono::milliseconds Backoff::next() {
  if (failures_ < 1'000'000) ++failures_;
  std::uniform_int_distribution<std::int64_t> pick(0, ceiling().count());
  return std::chrono::milliseconds{pick(rng_)};
}

}  // namespace rr::daemon
