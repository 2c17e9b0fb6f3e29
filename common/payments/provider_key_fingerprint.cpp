// Recording and comparing the provider key secret's fingerprint, and rotating it.
#include "common/payments/provider_key_fingerprint.hpp"

#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/cli/refused_start.hpp"
#include "common/db/connection.hpp"
#include "common/db/transaction.hpp"
#include "common/payments/provider_key.hpp"

namespace rr::payments {
namespace {

// ON CONFLICT DO NOTHING waits for a concurrent first insert and then does nothing; the SELECT is
// a statement of its own, so under READ COMMITTED it sees whichever row won.
constexpr const char* kRecordIfNone =
    "INSERT INTO provider_key_fingerprint (fingerprint, recorded_by) VALUES ($1, 'first start') "
    "ON CONFLICT (only_row) DO NOTHING";
constexpr const char* kRead =
    "SELECT fingerprint, recorded_at::text, recorded_by FROM provider_key_fingerprint WHERE only_row";
// The row is locked for the rest of the rotation's transaction, so two rotations queue.
constexpr const char* kReadForUpdate =
    "SELECT fingerprint, recorded_at::text, recorded_by FROM provider_key_fingerprint WHERE only_row FOR UPDATE";
constexpr const char* kRecordRotation =
    "INSERT INTO provider_key_fingerprint (fingerprint, recorded_by) VALUES ($1, 'rotation') "
    "ON CONFLICT (only_row) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, recorded_at = now(), "
    "recorded_by = EXCLUDED.recorded_by";

std::optional<RecordedFingerprint> read(pqxx::transaction_base& tx, const char* sql) {
  auto rows = tx.exec(sql);
  if (rows.empty()) return std::nullopt;
  return RecordedFingerprint{rows[0][0].as<std::string>(), rows[0][1].as<std::string>(), rows[0][2].as<std::string>()};
}

// A process started before `migrate` created the table: say so instead of a bare SQL error.
[[noreturn]] void missing_table() {
  throw std::runtime_error(
      "the provider_key_fingerprint table does not exist: run `rocket-rides-api migrate` before starting");
}

}  // namespace

RecordedFingerprint check_provider_key_fingerprint(pqxx::connection_base& conn, std::string_view secret,
                                                   std::chrono::milliseconds statement_timeout) {
  const std::string mine = provider_key_fingerprint(secret);
  std::optional<RecordedFingerprint> recorded;
  try {
    db::Transaction tx(conn, statement_timeout);
    tx.exec_params(kRecordIfNone, mine);
    recorded = read(tx, kRead);
    tx.commit();
  } catch (const pqxx::undefined_table&) {
    missing_table();
  }
  if (!recorded) throw std::runtime_error("provider_key_fingerprint has no row right after it was recorded");
  if (recorded->fingerprint != mine) {
    throw cli::RefusedStart(
        cli::kExitProviderKeyMismatch,
        "refusing to start: PROVIDER_KEY_SECRET differs from the one recorded at " + recorded->recorded_at + " (" +
            recorded->recorded_by +
            "), so this process would derive other provider idempotency keys than the rest of the deployment; "
            "set the deployment's secret, or run `" +
            std::string(kRotateProviderKeyCommand) + "` with the new one if it was changed on purpose");
  }
  return *recorded;
}

void check_provider_key_at_start(const config::DatabaseSettings& database, const config::PaymentSettings& payment) {
  RecordedFingerprint recorded;
  {
    // Closed before the line below: whoever watches for it finds only the process's own sessions.
    db::Connection conn(database.url);
    recorded = check_provider_key_fingerprint(conn, payment.provider_key_secret, database.session.statement_timeout);
  }
  log::info("PROVIDER_KEY_SECRET matches the deployment's fingerprint",
            {{"fingerprint", recorded.fingerprint.substr(0, 12)},
             {"recorded_at", recorded.recorded_at},
             {"recorded_by", recorded.recorded_by}});
}

Rotation rotate_provider_key_fingerprint(pqxx::connection_base& conn, std::string_view secret, bool dry_run,
                                         std::chrono::milliseconds statement_timeout) {
  Rotation rotation;
  rotation.fingerprint = provider_key_fingerprint(secret);
  try {
    db::Transaction tx(conn, statement_timeout);
    rotation.previous = read(tx, kReadForUpdate);
    rotation.changed = !rotation.previous || rotation.previous->fingerprint != rotation.fingerprint;
    if (rotation.changed && !dry_run) tx.exec_params(kRecordRotation, rotation.fingerprint);
    tx.commit();
  } catch (const pqxx::undefined_table&) {
    missing_table();
  }
  return rotation;
}

}  // namespace rr::payments
