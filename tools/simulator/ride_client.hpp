// A client of POST /rides that retries with the same Idempotency-Key until a final answer: the
// simulator's, the demo's and the tests' client.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "common/rides/ride_params.hpp"
#include "tools/simulator/retry_policy.hpp"

namespace rr::client {

struct RideClientOptions {
  std::string api_url;  // e.g. http://127.0.0.1:5000
  std::string token;
  std::chrono::milliseconds request_timeout{15000};
  RetryPolicy retry;
};

struct RideAttemptResult {
  int status = 0;    // the last status seen (0: no answer)
  std::string body;  // the last body seen
  int attempts = 0;
  bool final = false;     // false: gave up (abandoned) before a final answer
  bool replayed = false;  // the final answer carried Idempotent-Replayed: true
};

// `sleep` is injectable so a caller can stop waiting on shutdown; it returns false to give up.
RideAttemptResult create_ride(const RideClientOptions& options, const std::string& idempotency_key,
                              const rides::RideParams& params,
                              const std::function<bool(std::chrono::milliseconds)>& sleep);

}  // namespace rr::client
