// The bounded wait of a request whose key is in flight (Prefer: wait=N): how long it may
// wait, the deferral that parks it until the key is released, and how its answer says it waited.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/http/message.hpp"
#include "common/idempotency/key_waiters.hpp"

namespace rr::api {

using WaitPlace = std::shared_ptr<const idempotency::KeyWaiters::Place>;

struct BoundedWait {
  std::chrono::seconds applied{0};  // min(N, IDEMPOTENCY_MAX_WAIT); 0: no wait, 409 at once
  // Set once the request has waited (Request::wait_deadline): the deadline of its first wait.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // The place among its user's waiters the request took when it first waited (held_wait_place),
  // held until it is answered: a re-run that must wait again parks in it.
  WaitPlace place;

  BoundedWait() = default;
  BoundedWait(std::optional<std::uint64_t> preferred_seconds, std::chrono::seconds max_wait,
              std::optional<std::chrono::steady_clock::time_point> waited_until, WaitPlace held = nullptr);
  bool waited() const { return deadline.has_value(); }
};

// The waiter's place a deferred request holds on its re-run (Request::wait_place, as
// wait_for_release's deferral left it there), or null.
WaitPlace held_wait_place(const http::Request& request);

// The answer that parks the request in `waiters` until its key is released or the wait ends, or
// nothing when it may not wait (no wait asked or allowed, its time is up, the registry is full).
// A first wait takes one of the user's places, which the deferral hands to the request
// (Deferral::wait_place) to hold until it is answered; a re-run that waits again parks in the
// place it holds (wait.place) and is never refused. Throws ApiError 429 (Retry-After: 1) when a
// first wait finds the user already holding IDEMPOTENCY_MAX_WAITERS_PER_USER places: a flood of
// one user's waits must not take the registry from everyone else.
std::optional<http::Response> wait_for_release(idempotency::KeyWaiters* waiters, const BoundedWait& wait,
                                               std::int64_t user_id, const std::string& key);

// A waited request's answer says the wait was honoured: Preference-Applied: wait=M.
void mark_wait_applied(http::Response& response, const BoundedWait& wait);

// rocket_rides_idempotency_waits_total{outcome}: "waiting" (parked), "replayed", "ran" (took the key
// itself after the wait), "timed_out", "refused" (registry full), "refused_per_user" (the user at
// IDEMPOTENCY_MAX_WAITERS_PER_USER).
void count_wait(std::string_view outcome);

}  // namespace rr::api
