// Configuration of the stand-in payment provider, parsed once from the environment, and the fault
// knobs that tests and demos may also change at run time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/config/environment.hpp"

namespace rr::stripe_mock {

// Faults injected into POST /v1/charges and POST /v1/refunds (latency applies to every /v1/
// request). The *_next counts are set at run time only (POST /_mock/config), for tests that need
// an exact sequence: the next N such requests fail or drop, before the rates are consulted.
struct Faults {
  double failure_rate = 0;               // MOCK_FAILURE_RATE: answered 500 before anything is recorded
  std::chrono::milliseconds latency{0};  // MOCK_LATENCY_MS: slept before answering
  double drop_rate = 0;                  // MOCK_DROP_RATE: recorded, then the connection is dropped
  std::int64_t fail_next = 0;            // answered 500 like failure_rate, then counted down
  std::int64_t drop_next = 0;            // dropped like drop_rate, then counted down
  // While set, every /v1/ request waits after its latency until it is cleared (at most
  // kMaxLatencyMs): a provider that holds charges exactly as long as a test needs, however slow
  // the machine, where a latency would be a guess.
  bool hold = false;
};

// Idempotency keys kept by default: at the bench's pace (some 4,400 charges a second) the last
// few minutes of keys, and about 100 MB at most; the charges themselves are all kept.
inline constexpr std::int64_t kDefaultMaxIdempotencyKeys = 5000000;
inline constexpr std::int64_t kMaxIdempotencyKeysLimit = 1000000000;

struct MockConfig {
  std::uint16_t port = 0;                  // PORT, required
  std::string bind_address = "127.0.0.1";  // BIND_ADDRESS
  std::string api_key;                     // STRIPE_API_KEY: when set, the only Bearer token accepted
  Faults faults;
  std::uint64_t seed = 0;  // MOCK_SEED, random when unset
  // MOCK_MAX_IDEMPOTENCY_KEYS: beyond it the oldest key is forgotten (as Stripe forgets a key after
  // 24 hours, which the stand-in also does): a retry with it is a new request.
  std::int64_t max_idempotency_keys = kDefaultMaxIdempotencyKeys;

  static MockConfig from_env(const config::Environment& env);
};

inline constexpr std::int64_t kMaxLatencyMs = 600000;
inline constexpr std::int64_t kMaxFaultCount = 1000000;

// A probability written as a decimal in [0, 1]; nothing when it is not one.
std::optional<double> parse_rate(std::string_view text);

}  // namespace rr::stripe_mock
