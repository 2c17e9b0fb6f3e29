// Exit statuses shared by every binary, so scripts can tell a bad setup from a failure.
#pragma once

namespace rr::cli {
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
// Bad configuration or usage: fix the environment or the command line, retrying will not help.
inline constexpr int kExitConfig = 2;
}  // namespace rr::cli
