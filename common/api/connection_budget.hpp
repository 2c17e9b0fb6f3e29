// API_MAX_CONNECTIONS from the descriptor limit: client connections may use what RLIMIT_NOFILE
// leaves after everything else the API opens, so that idle clients can never take the
// descriptors the database pool, the provider, the log or the listener need (then accept fails
// and every client, /healthz included, times out).
#pragma once

#include <cstddef>
#include <optional>

#include "common/config/environment.hpp"

namespace rr::api {

// Descriptors kept out of the client connections: the database pool, provider connections (one
// per worker at most: a worker makes one call at a time), and a fixed allowance for the standard
// streams, the log, listening sockets (the API's and a metrics port), each I/O thread's
// epoll/eventfd/timer descriptors, the watchdog's own check and the sanitizer runtime.
std::size_t reserved_descriptors(std::size_t database_pool_size, std::size_t worker_threads, std::size_t fibers,
                                 std::size_t io_threads);

// The cap on client connections: API_MAX_CONNECTIONS when set, else everything the limit leaves.
// Throws ConfigError naming API_MAX_CONNECTIONS for a value above what `descriptor_limit` allows,
// or when the limit leaves no room at all. Without a limit (unlimited), `kUnlimitedDefault`.
std::size_t connection_cap(const config::Environment& env, std::optional<std::size_t> descriptor_limit,
                           std::size_t reserved);

inline constexpr std::size_t kUnlimitedDefault = 100000;
// Below this many connections the API is not worth starting: the limit is a misconfiguration.
inline constexpr std::size_t kMinConnections = 16;

}  // namespace rr::api
