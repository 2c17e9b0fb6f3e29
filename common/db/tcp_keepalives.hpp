// TCP liveness for every libpq session: keepalives and tcp_user_timeout added to the connection
// URL, so that a connection to a leader that vanished behind a partition (no FIN, no RST) fails in
// seconds instead of waiting for the kernel's retransmission limit (about 15 minutes on Linux).
#pragma once

#include <chrono>
#include <string>

namespace rr::db {

// Probing starts after this much idleness, repeats at this interval, and gives up after this
// many unanswered probes: an idle pooled session to a dead server is found within about 20 s.
inline constexpr std::chrono::seconds kKeepalivesIdle{10};
inline constexpr std::chrono::seconds kKeepalivesInterval{3};
inline constexpr int kKeepalivesCount{3};

// `url` (a libpq URI) with keepalives=1, keepalives_idle, keepalives_interval, keepalives_count and
// tcp_user_timeout (milliseconds: how long sent data may stay unacknowledged) appended as query
// parameters, each only where the URL does not set it already: an operator's own value wins.
// libpq applies them to TCP connections only; a Unix socket ignores them.
std::string with_tcp_keepalives(const std::string& url, std::chrono::milliseconds tcp_user_timeout);

}  // namespace rr::db
