// Deferring a request until its key is released, and the wait's answer header and metrics.
#include "common/api/bounded_wait.hpp"

#include <algorithm>
#include <memory>

#include "common/metrics/registry.hpp"

namespace rr::api {

BoundedWait::BoundedWait(std::optional<std::uint64_t> preferred_seconds, std::chrono::seconds max_wait,
                         std::optional<std::chrono::steady_clock::time_point> waited_until)
    : deadline(waited_until) {
  if (!preferred_seconds || max_wait.count() <= 0) return;
  applied = std::chrono::seconds(static_cast<std::int64_t>(
      std::min<std::uint64_t>(*preferred_seconds, static_cast<std::uint64_t>(max_wait.count()))));
}

std::optional<http::Response> wait_for_release(idempotency::KeyWaiters* waiters, const BoundedWait& wait,
                                               std::int64_t user_id, const std::string& key) {
  if (!waiters || wait.applied.count() <= 0) return std::nullopt;
  auto now = std::chrono::steady_clock::now();
  auto deadline = wait.deadline.value_or(now + wait.applied);
  if (now >= deadline) {
    count_wait("timed_out");
    return std::nullopt;
  }
  if (!waiters->has_room()) {
    count_wait("refused");
    return std::nullopt;
  }
  count_wait("waiting");
  http::Response later;
  later.deferral = std::make_shared<const http::Deferral>(
      http::Deferral{deadline, [waiters, user_id, key, deadline](std::shared_ptr<http::Continuation> continuation) {
                       waiters->add(user_id, key, deadline, std::move(continuation));
                     }});
  return later;
}

void mark_wait_applied(http::Response& response, const BoundedWait& wait) {
  if (!wait.waited() || response.deferral) return;
  response.with_header("Preference-Applied", "wait=" + std::to_string(wait.applied.count()));
}

void count_wait(std::string_view outcome) {
  auto& counter = metrics::default_registry().counter(
      "rocket_rides_idempotency_waits_total",
      "Requests for a key in flight that waited for it (Prefer: wait=N), by outcome.",
      {{"outcome", std::string(outcome)}});
  counter.inc();
}

}  // namespace rr::api
