// A cap on open connections, so that clients holding connections open can never use up the
// process's file descriptors (then accept fails, and /healthz and every real client time out).
// At the cap a new connection takes the place of the oldest one that has no request in progress
// (idle between requests, never sent anything, or still sending its request): held idle
// connections cannot keep a real client out, and no request being handled is ever cut off.
// Only when every connection has a request in progress is the new one refused.
#pragma once

#include <sys/resource.h>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_set>

#include "common/base/throttled_warning.hpp"

namespace rr::http {

class ConnectionLimit {
 public:
  using Id = std::uint64_t;

  // 0: no cap (connections are still tracked).
  explicit ConnectionLimit(std::size_t max_connections);

  struct Admission {
    bool admitted = true;
    Id id = 0;                  // the new connection's, when admitted
    std::optional<Id> evicted;  // a connection to close to make room
  };
  // A connection was accepted. Logs the cap being hit at most once per interval.
  Admission admit();
  // The connection's request is complete and handed to a handler: not to be evicted until idle().
  void busy(Id id);
  // Its answer is written (or dropped): evictable again.
  void idle(Id id);
  // Its socket is closed. Idempotent.
  void closed(Id id);

  std::size_t open() const;
  std::size_t max_connections() const { return max_; }

 private:
  const std::size_t max_;
  mutable std::mutex mutex_;
  Id next_id_ = 1;
  // Ids grow with acceptance, so the smallest idle id is the oldest idle connection.
  std::set<Id> idle_;
  std::unordered_set<Id> busy_;
  std::unordered_set<Id> evicting_;  // chosen to make room, still open until its close runs
  log::ThrottledWarning cap_hit_{"connection cap reached: closing the oldest idle connections to make room"};
  log::ThrottledWarning refused_{"connection cap reached with every connection busy: refusing new connections"};
};

// The descriptors this process may open (RLIMIT_NOFILE's soft limit); nothing when unlimited.
std::optional<std::size_t> descriptor_limit();

}  // namespace rr::http
