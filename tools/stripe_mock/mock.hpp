// The stand-in payment provider as a pure handler: a Stripe-compatible subset (customers, charges,
// refunds, idempotency keys, card declines) plus fault injection and admin endpoints for tests and
// demos.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>
#include <string>

#include "common/http/message.hpp"
#include "tools/stripe_mock/config.hpp"
#include "tools/stripe_mock/ledger.hpp"
#include "tools/stripe_mock/list_query.hpp"
#include "tools/stripe_mock/params.hpp"
#include "tools/stripe_mock/replay_store.hpp"

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
//   GET /v1/charges [limit starting_after ending_before created created[gt|gte|lt|lte] customer],
//   GET /v1/refunds [the same, charge instead of customer]: Stripe's list object, newest first
//   Every answer carries Request-Id (req_...) and Stripe-Version.
//   Idempotency-Key on a POST: the first answer (2xx or 402) is replayed with
//   "Idempotent-Replayed: true" and "Original-Request: <its Request-Id>"; another endpoint or
//   other parameters under the same key -> 400 idempotency_error; an answer that refused the
//   request (400, 404) is not stored, so the key stays usable. Keys are kept 24 hours and at most
//   `max_idempotency_keys` of them (the oldest go first); answers are rendered again from the
//   ledger's records, never stored.
//   Faults (failures, drops) apply to POST /v1/charges, POST /v1/refunds and their lists, latency
//   to all /v1/.
// Admin, no auth: GET /_mock/stats (counters, idempotency keys kept and pruned), GET /_mock/charges, GET
// /_mock/refunds, GET|POST /_mock/config (failure_rate, latency_ms, drop_rate, fail_next, drop_next, hold as JSON or
// form fields), POST /_mock/reset (state, counters, and faults back to the startup values).
class Mock {
 public:
  // `api_key` empty accepts any Bearer token; `seed` makes ids and injected faults reproducible.
  Mock(std::string api_key, Faults faults, std::uint64_t seed,
       std::size_t max_idempotency_keys = kDefaultMaxIdempotencyKeys);

  // Thread-safe. Waits for the configured latency on /v1/ requests (fiber::sleep_for: a request
  // fiber suspends, a worker thread sleeps; never on a thread that must not block). A dropped
  // charge or refund comes back carrying http::kDropConnectionHeader.
  http::Response handle(const http::Request& request);

 private:
  // What a create did: its answer and the object it made (kNoObject when it refused).
  struct Created {
    http::Response response;
    ObjectIndex object = kNoObject;
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
  http::Response create(const http::Request& request, const std::string& request_id, const std::string& account);
  http::Response replay(const StoredRequest& stored) const;  // mutex_ held
  http::Response retrieve(const std::string& path);
  http::Response list(const http::Request& request);
  bool authorized(const http::Request& request) const;
  // Whether /v1/ requests are held (Faults::hold); a held request looks again every
  // kHoldPollInterval.
  bool held();
  static constexpr std::chrono::milliseconds kHoldPollInterval{20};
  // mutex_ held: whether this charge or refund request is answered by an injected fault.
  bool inject_failure();
  bool inject_drop();

  // customers.cpp, charges.cpp, refunds.cpp: Stripe's objects; mutex_ held, parameters decoded.
  Created create_customer(const Params& params, const std::string& idempotency_key);
  Created create_charge(const Params& params, const std::string& idempotency_key);
  Created create_refund(const Params& params, const std::string& idempotency_key);

  // listing.cpp: Stripe's lists; mutex_ held.
  http::Response list_charges(const ListQuery& query);
  http::Response list_refunds(const ListQuery& query);

  // admin.cpp: /_mock/ endpoints, no auth.
  http::Response admin(const http::Request& request);
  http::Response stats_json();
  http::Response charges_json();
  http::Response refunds_json();
  http::Response configure(const http::Request& request);
  http::Response faults_json();

  // The fault draws' own stream of the seed, apart from the ledger's ids: which requests fail does
  // not depend on how many objects were made in between.
  static std::uint64_t fault_seed(std::uint64_t seed);
  // mutex_ held.
  bool roll(double rate);
  std::string new_request_id();

  const std::string api_key_;
  const Faults initial_faults_;
  const std::uint64_t seed_;

  std::mutex mutex_;
  Faults faults_;
  std::mt19937_64 fault_random_;
  // Request ids draw from a generator of their own, seeded by the system, not by `seed`: they
  // stay unique across runs that replay one seed, and object ids and fault draws of a seed do not
  // depend on how many admin or GET requests came in between.
  std::mt19937_64 request_random_;
  // A bench run makes hundreds of thousands of charges: the ledger keeps them compact, and the
  // store keeps a bounded number of keys, not their answers (several kilobytes each).
  Ledger ledger_;
  ReplayStore replays_;
  Stats stats_;
};

}  // namespace rr::stripe_mock
