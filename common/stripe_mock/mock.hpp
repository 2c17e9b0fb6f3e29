// The stand-in payment provider as a pure handler: a Stripe-compatible subset (customers, charges,
// refunds, idempotency keys, card declines) plus fault injection and admin endpoints for tests and
// demos.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/base/string_hash.hpp"
#include "common/http/message.hpp"
#include "common/stripe_mock/config.hpp"
#include "common/stripe_mock/objects.hpp"
#include "common/stripe_mock/params.hpp"

namespace rr::stripe_mock {

// Stripe-Version of every answer to a request that named none (Stripe answers with the account's
// default version; a request's own Stripe-Version header is echoed).
inline constexpr std::string_view kDefaultStripeVersion = "2024-06-20";

// Stripe's API (form-encoded in, JSON out, "Authorization: Bearer <key>" required):
//   POST /v1/customers [description email name phone metadata[...]] -> customer object
//   POST /v1/charges amount currency customer [description metadata[...]] -> charge object;
//        402 card_error naming a failed charge for a customer containing "declined"
//   POST /v1/refunds charge [amount reason metadata[...]] -> refund object (the whole unrefunded
//        rest by default); 404 resource_missing for an unknown charge, 400 amount_too_large
//        beyond the unrefunded rest, 400 charge_already_refunded when nothing is left
//   GET /v1/customers/{id}, /v1/charges/{id}, /v1/refunds/{id}
//   Every answer carries Request-Id (req_...) and Stripe-Version.
//   Idempotency-Key on a POST: the first answer (2xx or 402) is stored and replayed with
//   "Idempotent-Replayed: true" and "Original-Request: <its Request-Id>"; another endpoint or
//   other parameters under the same key -> 400 idempotency_error; an answer that refused the
//   request (400, 404) is not stored, so the key stays usable.
//   Faults (failures, drops) apply to POST /v1/charges and POST /v1/refunds, latency to all /v1/.
// Admin, no auth: GET /_mock/stats, GET /_mock/charges, GET /_mock/refunds, GET|POST /_mock/config
// (failure_rate, latency_ms, drop_rate, fail_next, drop_next as JSON or form fields),
// POST /_mock/reset (state, counters, and faults back to the startup values).
class Mock {
 public:
  // `api_key` empty accepts any Bearer token; `seed` makes ids and injected faults reproducible.
  Mock(std::string api_key, Faults faults, std::uint64_t seed);

  // Thread-safe. Waits for the configured latency on /v1/ requests (fiber::sleep_for: a request
  // fiber suspends, a worker thread sleeps; never on a thread that must not block). A dropped
  // charge or refund comes back carrying http::kDropConnectionHeader.
  http::Response handle(const http::Request& request);

 private:
  // What a key's first request produced, replayed for every later request with that key.
  struct StoredResponse {
    std::string endpoint;  // "POST /v1/charges"
    Params params;         // sorted, so parameter order does not matter
    int status = 0;
    std::string body;
    std::string request_id;  // of the request that produced it: Original-Request on replays
  };
  struct Stats {
    std::int64_t charges = 0;  // succeeded; declines are not counted
    std::int64_t refunds = 0;
    std::int64_t requests = 0;
    std::int64_t replays = 0;
    std::int64_t failures_injected = 0;
    std::int64_t drops_injected = 0;
  };

  http::Response route(const http::Request& request, const std::string& request_id);

  // mock.cpp: auth, fault injection and idempotency around the Stripe endpoints.
  http::Response api(const http::Request& request, const std::string& request_id);
  http::Response retrieve(const std::string& path);
  bool authorized(const http::Request& request) const;
  // mutex_ held: whether this charge or refund request is answered by an injected fault.
  bool inject_failure();
  bool inject_drop();

  // customers.cpp, charges.cpp, refunds.cpp: Stripe's objects; mutex_ held, parameters decoded.
  http::Response create_customer(const Params& params);
  http::Response create_charge(const Params& params, const std::string& idempotency_key);
  http::Response create_refund(const Params& params, const std::string& idempotency_key);

  // admin.cpp: /_mock/ endpoints, no auth.
  http::Response admin(const http::Request& request);
  http::Response stats_json();
  http::Response charges_json();
  http::Response refunds_json();
  http::Response configure(const http::Request& request);
  http::Response faults_json();

  // mutex_ held.
  bool roll(double rate);
  std::string new_id(std::string_view prefix, int length = 24);
  std::string new_request_id();

  const std::string api_key_;
  const Faults initial_faults_;
  const std::uint64_t seed_;

  std::mutex mutex_;
  Faults faults_;
  std::mt19937_64 random_;
  // Request ids draw from a generator of their own, seeded by the system, not by `seed`: they
  // stay unique across runs that replay one seed, and object ids and fault draws of a seed do not
  // depend on how many admin or GET requests came in between.
  std::mt19937_64 request_random_;
  // Deques: records keep their addresses as more are added, so the maps and a charge's refund
  // list can point at them. Hash maps, not ordered ones: a bench run stores hundreds of thousands
  // of charges and keys, and an ordered map's lookups compared long common prefixes ("sk_...\n")
  // at every level (15 % of the stand-in's CPU per charge).
  std::deque<Customer> customers_;
  std::deque<Charge> charges_;  // succeeded and declined, oldest first
  std::deque<Refund> refunds_;
  StringMap<Customer*> customers_by_id_;
  StringMap<Charge*> charges_by_id_;
  StringMap<Refund*> refunds_by_id_;
  StringMap<StoredResponse> stored_;  // by "<api key>\n<idempotency key>"
  Stats stats_;
};

}  // namespace rr::stripe_mock
