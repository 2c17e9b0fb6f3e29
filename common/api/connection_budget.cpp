// The connection cap's default and bound, from RLIMIT_NOFILE.
#include "common/api/connection_budget.hpp"

#include <string>

namespace rr::api {
namespace {

constexpr const char* kVariable = "API_MAX_CONNECTIONS";
constexpr std::size_t kFixedDescriptors = 64;
constexpr std::size_t kDescriptorsPerIoThread = 4;

}  // namespace

std::size_t reserved_descriptors(std::size_t database_pool_size, std::size_t worker_threads, std::size_t fibers,
                                 std::size_t io_threads) {
  // Each worker and each fiber may hold a connection to the provider.
  return database_pool_size + worker_threads + fibers + io_threads * kDescriptorsPerIoThread + kFixedDescriptors;
}

std::size_t connection_cap(const config::Environment& env, std::optional<std::size_t> descriptor_limit,
                           std::size_t reserved) {
  if (!descriptor_limit) {
    return static_cast<std::size_t>(env.integer(kVariable, kUnlimitedDefault, 1, 10000000));
  }
  std::string why = "RLIMIT_NOFILE is " + std::to_string(*descriptor_limit) + " and " + std::to_string(reserved) +
                    " descriptors are kept for the database pool, provider connections, the log and listening sockets";
  if (*descriptor_limit < reserved + kMinConnections) {
    throw config::ConfigError(kVariable,
                              "leaves fewer than " + std::to_string(kMinConnections) + " client connections: " + why +
                                  "; raise the limit (LimitNOFILE=) or lower DATABASE_POOL_SIZE or API_WORKERS");
  }
  auto allowed = *descriptor_limit - reserved;
  auto text = env.get(kVariable);
  if (!text) return allowed;
  auto value = config::parse_integer(*text);
  if (!value || *value < 1)
    throw config::ConfigError(kVariable, "must be a whole number of at least 1, got \"" + *text + "\"");
  if (static_cast<std::size_t>(*value) > allowed) {
    throw config::ConfigError(kVariable, "must be at most " + std::to_string(allowed) + " (" + why + "), got " + *text);
  }
  return static_cast<std::size_t>(*value);
}

}  // namespace rr::api
