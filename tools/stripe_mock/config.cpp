// Reads the stand-in provider's environment; a bad value names its variable.
#include "tools/stripe_mock/config.hpp"

#include <arpa/inet.h>

#include <limits>
#include <random>

namespace rr::stripe_mock {
namespace {

double rate(const config::Environment& env, const std::string& name) {
  auto text = env.get(name);
  if (!text) return 0;
  auto value = parse_rate(*text);
  if (!value) throw config::ConfigError(name, "must be a decimal between 0 and 1, got \"" + *text + "\"");
  return *value;
}

bool is_ip_address(const std::string& text) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, text.c_str(), buffer) == 1 || inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

}  // namespace

std::optional<double> parse_rate(std::string_view text) {
  auto value = config::parse_finite_decimal(text);
  if (!value || *value < 0 || *value > 1) return std::nullopt;
  return value;
}

MockConfig MockConfig::from_env(const config::Environment& env) {
  MockConfig config;
  config.port = env.port("PORT", std::nullopt);
  config.bind_address = env.string_or("BIND_ADDRESS", "127.0.0.1");
  if (!is_ip_address(config.bind_address)) {
    throw config::ConfigError("BIND_ADDRESS", "must be an IPv4 or IPv6 address, got \"" + config.bind_address + "\"");
  }
  config.api_key = env.string_or("STRIPE_API_KEY", "");
  config.faults.failure_rate = rate(env, "MOCK_FAILURE_RATE");
  config.faults.latency = std::chrono::milliseconds(env.integer("MOCK_LATENCY_MS", 0, 0, kMaxLatencyMs));
  config.faults.drop_rate = rate(env, "MOCK_DROP_RATE");
  config.max_idempotency_keys =
      env.integer("MOCK_MAX_IDEMPOTENCY_KEYS", kDefaultMaxIdempotencyKeys, 1, kMaxIdempotencyKeysLimit);
  if (env.get("MOCK_SEED")) {
    config.seed = static_cast<std::uint64_t>(env.integer("MOCK_SEED", 0, 0, std::numeric_limits<std::int64_t>::max()));
  } else {
    std::random_device device;
    config.seed = (static_cast<std::uint64_t>(device()) << 32) | device();
  }
  return config;
}

}  // namespace rr::stripe_mock
