// The stand-in payment provider as a pure handler: a Stripe-compatible subset (customers, charges,
// idempotency keys, card declines) plus fault injection and admin endpoints for tests and demos.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/http/message.hpp"
#include "common/stripe_mock/config.hpp"

namespace rr::stripe_mock {

using Params = std::vector<std::pair<std::string, std::string>>;

// Stripe's API (form-encoded in, JSON out, "Authorization: Bearer <key>" required):
//   POST /v1/customers                         -> {"id":"cus_...","object":"customer",...}
//   POST /v1/charges amount currency customer  -> {"id":"ch_...","object":"charge",...}
//        [description]                            402 card_error for a customer containing "declined"
//   Idempotency-Key: the first answer (200 or 402) is stored and replayed with
//   "Idempotent-Replayed: true"; other parameters under the same key -> 400 idempotency_error;
//   a 400 validation error is not stored, so the key stays usable.
// Admin, no auth: GET /_mock/stats, GET /_mock/charges, GET|POST /_mock/config (failure_rate,
// latency_ms, drop_rate as JSON or form fields), POST /_mock/reset (state, counters, and faults
// back to the startup values).
class Mock {
 public:
  // `api_key` empty accepts any Bearer token; `seed` makes ids and injected faults reproducible.
  Mock(std::string api_key, Faults faults, std::uint64_t seed);

  // Thread-safe. Sleeps for the configured latency on /v1/ requests, so it must run on a worker
  // thread. A dropped charge comes back carrying http::kDropConnectionHeader.
  http::Response handle(const http::Request& request);

 private:
  struct Charge {
    std::string id;
    std::string idempotency_key;
    std::string customer;
    std::string currency;
    std::string description;
    std::int64_t amount = 0;
  };
  // What a key's first request produced, replayed for every later request with that key.
  struct StoredResponse {
    std::string endpoint;  // "POST /v1/charges"
    Params params;         // sorted, so parameter order does not matter
    int status = 0;
    std::string body;
  };
  struct Stats {
    std::int64_t charges = 0;
    std::int64_t requests = 0;
    std::int64_t replays = 0;
    std::int64_t failures_injected = 0;
    std::int64_t drops_injected = 0;
  };

  http::Response route(const http::Request& request);

  // mock.cpp: auth, fault injection and idempotency around the Stripe endpoints.
  http::Response api(const http::Request& request);
  bool authorized(const http::Request& request) const;

  // resources.cpp: Stripe's objects; mutex_ held, parameters already decoded.
  http::Response create_charge(const Params& params, const std::string& idempotency_key);
  http::Response create_customer(const Params& params);

  // admin.cpp: /_mock/ endpoints, no auth.
  http::Response admin(const http::Request& request);
  http::Response stats_json();
  http::Response charges_json();
  http::Response configure(const http::Request& request);
  http::Response faults_json();

  // mutex_ held.
  bool roll(double rate);
  std::string new_id(std::string_view prefix);

  const std::string api_key_;
  const Faults initial_faults_;
  const std::uint64_t seed_;

  std::mutex mutex_;
  Faults faults_;
  std::mt19937_64 random_;
  std::vector<Charge> charges_;
  std::map<std::string, StoredResponse> stored_;  // by "<api key>\n<idempotency key>"
  Stats stats_;
};

}  // namespace rr::stripe_mock
