// Deferring a request until its key is released, and the wait's answer header and metrics.
#include "common/api/bounded_wait.hpp"

#include <algorithm>
#include <any>
#include <memory>

#include "common/api/outcome_answers.hpp"
#include "common/metrics/registry.hpp"

namespace rr::api {

BoundedWait::BoundedWait(std::optional<std::uint64_t> preferred_seconds, std::chrono::seconds max_wait,
                         std::optional<std::chrono::steady_clock::time_point> waited_until, WaitPlace held)
    : deadline(waited_until), place(std::move(held)) {
  if (!preferred_seconds || max_wait.count() <= 0) return;
  applied = std::chrono::seconds(static_cast<std::int64_t>(
      std::min<std::uint64_t>(*preferred_seconds, static_cast<std::uint64_t>(max_wait.count()))));
}

WaitPlace held_wait_place(const http::Request& request) {
  const auto* held = std::any_cast<WaitPlace>(&request.wait_place);
  return held ? *held : nullptr;
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
  // A re-run woken while the key is still in flight (its lock looked abandoned, or its creation
  // rolled back and was retried) parks again in the place it holds: had the place been given back
  // when it woke, another request could have taken it meanwhile, and more than the bound waited.
  WaitPlace place = wait.place;
  if (!place) {
    auto reserved = waiters->reserve(user_id);
    if (auto* refusal = std::get_if<idempotency::KeyWaiters::Refusal>(&reserved)) {
      if (*refusal == idempotency::KeyWaiters::Refusal::registry_full) {
        count_wait("refused");
        return std::nullopt;
      }
      // Not the 409 of a key in flight: this user asks for more waits than anyone may hold, and
      // retrying the same key later is what helps (as for API_MAX_IN_FLIGHT_PER_USER).
      count_wait("refused_per_user");
      throw too_many_waiting();
    }
    place = std::get<std::shared_ptr<idempotency::KeyWaiters::Place>>(std::move(reserved));
  }
  count_wait("waiting");
  http::Response later;
  later.deferral = std::make_shared<const http::Deferral>(http::Deferral{
      .deadline = deadline,
      .park =
          [waiters, place, key, deadline](std::shared_ptr<http::Continuation> continuation) {
            // The waiters know no HTTP: they resume the parked request through a callback.
            waiters->add(*place, key, deadline,
                         [continuation = std::move(continuation)] { continuation->run_again(); });
          },
      // The request holds the place from here until it is answered (given back if it is never
      // parked).
      .wait_place = place,
  });
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
