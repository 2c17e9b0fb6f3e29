// RFC 3339 timestamps as the reconcile command and the charge metadata write them
// (2026-11-27T12:00:00Z, 2026-11-27T12:00:00.123456Z, 2026-11-27T14:00:00+02:00), read strictly.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rr::reconciliation {

struct Rfc3339Time {
  std::int64_t unix_seconds = 0;  // the whole second, rounded down
  std::int64_t microseconds = 0;  // 0..999999 after it
};

// Nothing unless `text` is a full RFC 3339 date-time with a zone (Z or +hh:mm).
std::optional<Rfc3339Time> parse_rfc3339(std::string_view text);

}  // namespace rr::reconciliation
