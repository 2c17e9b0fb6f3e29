// The start-up check that every process deriving provider idempotency keys uses the same
// PROVIDER_KEY_SECRET: the database keeps one fingerprint (sql/018_provider_key_fingerprint.sql),
// the first process records its own, every later one compares. Different secrets derive different
// provider keys for the same request, so a retry after a lost commit, driven by a process with the
// other secret, would reach the provider as a new charge; refusing to start is the only safe answer.
#pragma once

#include <chrono>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>

#include "common/config/settings.hpp"

namespace rr::payments {

// The command that records a new secret's fingerprint, named in the refusal.
inline constexpr std::string_view kRotateProviderKeyCommand = "rocket-rides-api rotate-provider-key";

struct RecordedFingerprint {
  std::string fingerprint;  // 64 hex digits
  std::string recorded_at;  // the database's text of the time it was written
  std::string recorded_by;  // "first start" or "rotation"
};

// Records provider_key_fingerprint(secret) when none is recorded (the first process; of two that
// start at once on an empty record, both end up comparing with the one that won), else compares.
// Returns the record; a different fingerprint throws cli::RefusedStart with the exit status
// kExitProviderKeyMismatch and one line naming the setting, when the recorded one was written and
// the command that rotates it. Every statement is bounded by `statement_timeout` (0: none).
RecordedFingerprint check_provider_key_fingerprint(pqxx::connection_base& conn, std::string_view secret,
                                                   std::chrono::milliseconds statement_timeout);

// What a process that derives provider keys runs before anything else: a session of its own to
// DATABASE_URL, the check above with payment.provider_key_secret, one log line saying whether it
// recorded or matched the fingerprint (its first 12 digits), the session closed.
void check_provider_key_at_start(const config::DatabaseSettings& database, const config::PaymentSettings& payment);

struct Rotation {
  std::optional<RecordedFingerprint> previous;  // none: nothing was recorded yet
  std::string fingerprint;                      // the new secret's
  bool changed = false;                         // false: the record already had it
};

// Records provider_key_fingerprint(secret) as the deployment's, whatever was recorded before (the
// operator's explicit step); with `dry_run` only says what it would do.
Rotation rotate_provider_key_fingerprint(pqxx::connection_base& conn, std::string_view secret, bool dry_run,
                                         std::chrono::milliseconds statement_timeout);

}  // namespace rr::payments
