// How a duration is handed to SQL: as fractional seconds (make_interval(secs => $n) and the
// idem_* functions take them), so that milliseconds survive: 0.25 s stays 0.25, not 0.
#pragma once

#include <chrono>

namespace rr::db {

inline double seconds_of(std::chrono::milliseconds duration) {
  return static_cast<double>(duration.count()) / 1000.0;
}

}  // namespace rr::db
