// Exit statuses shared by every binary, so scripts can tell a bad setup from a failure.
#pragma once

namespace rr::cli {
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
// Bad configuration or usage: fix the environment or the command line, retrying will not help.
inline constexpr int kExitConfig = 2;
// Operator subcommands: the user, key or token named does not exist.
inline constexpr int kExitNotFound = 3;
// Operator subcommands: it exists but there was nothing to do (`keys unlock` of an unlocked key).
inline constexpr int kExitNothingToDo = 4;
// Operator subcommands: acting could be unsafe or could hit the wrong thing, so nothing was done
// (a live lock without --force, an ambiguous token prefix, a lock that changed hands meanwhile).
inline constexpr int kExitRefused = 5;
// Start-up self-check: PROVIDER_KEY_SECRET differs from the one the database recorded (rotating it
// is `rocket-rides-api rotate-provider-key`). Restarting will not help; the setting or the record must change.
inline constexpr int kExitProviderKeyMismatch = 6;
}  // namespace rr::cli
