// One reaper batch: pick, archive the unfinished, delete, commit; one warning per archived key.
#include "common/maintenance/reaper.hpp"
#include "common/db/sql_seconds.hpp"

#include <pqxx/pqxx>

#include "common/auth/tokens.hpp"
#include "common/base/log.hpp"
#include "common/db/transaction.hpp"
#include "common/metrics/registry.hpp"

namespace rr::maintenance {

namespace {

// One statement, so the batch is one round trip and one short transaction. Every part sees the
// same snapshot: the INSERT copies the rows the DELETE removes. ON CONFLICT makes a redone batch
// harmless. The final SELECT always returns a row (the count) plus one row per archived key.
// Deleting a key sets its ride's idempotency_key_id to NULL (ON DELETE SET NULL): rides stay.
// The oldest keys are the first ids (a key's id is taken when it is created): the batch is picked
// from the first 2 x batch ids by the primary key, with no index on created_at, which every
// insert would have to write (sql/012). When the oldest key is not expired, none is; the window
// is twice the batch so that a few keys still locked at its head never leave a batch short (a
// short batch sends the reaper to sleep).
const db::Statement kReapBatch{
    "reaper_reap_batch",
    "WITH doomed AS ("
    "  SELECT id FROM idempotency_keys"
    "  WHERE id = ANY (ARRAY(SELECT id FROM idempotency_keys ORDER BY id LIMIT 2 * $2))"
    "    AND created_at < now() - make_interval(secs => $1)"
    "    AND (locked_at IS NULL OR locked_at < now() - make_interval(secs => $3))"
    "  ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED"
    "), archived AS ("
    "  INSERT INTO idempotency_keys_archive (id, created_at, last_run_at, locked_at, idempotency_key,"
    "      request_method, request_path, request_params, origin_ip, recovery_point, payment_idempotency_key,"
    "      attempts, last_error, user_id)"
    "  SELECT k.id, k.created_at, k.last_run_at, k.locked_at, k.idempotency_key, k.request_method,"
    "      k.request_path, k.request_params, k.origin_ip, k.recovery_point, k.payment_idempotency_key,"
    "      k.attempts, k.last_error, k.user_id"
    "  FROM idempotency_keys k JOIN doomed USING (id) WHERE k.recovery_point <> 'finished'"
    "  ON CONFLICT (id) DO NOTHING"
    "), deleted AS ("
    "  DELETE FROM idempotency_keys k USING doomed WHERE k.id = doomed.id"
    "  RETURNING k.id, k.user_id, k.recovery_point, k.attempts, k.idempotency_key"
    ") "
    "SELECT total.n, d.id, d.user_id, d.recovery_point, d.attempts, d.idempotency_key "
    "FROM (SELECT count(*) AS n FROM deleted) total "
    "LEFT JOIN (SELECT * FROM deleted WHERE recovery_point <> 'finished') d ON true "
    "ORDER BY d.id"};

// Expired sessions, oldest first; a session is only ever read after its expiry to be refused, so
// deleting it changes no answer.
const db::Statement kReapSessions{"reaper_reap_sessions",
                                  "DELETE FROM rider_sessions WHERE token_hash IN ("
                                  "  SELECT token_hash FROM rider_sessions WHERE expires_at <= now()"
                                  "  ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)"};

}  // namespace

ReaperReport Reaper::run_once() {
  ReaperReport report;
  db::Result rows;
  {
    auto conn = pool_.acquire();
    db::Transaction tx(conn.conn(), conn.statement_timeout());
    rows = conn.exec(tx, kReapBatch, db::seconds_of(options_.max_age), options_.batch_size,
                     db::seconds_of(options_.lock_timeout));
    tx.commit();
  }
  // Logged only after the commit: a rolled-back batch archived nothing.
  for (const auto& row : rows) {
    report.deleted = row[0].as<std::int64_t>();
    if (row[1].is_null()) continue;
    ++report.archived;
    log::warn("reaped an unfinished idempotency key", {{"key_id", row[1].as<std::int64_t>()},
                                                       {"user_id", row[2].as<std::int64_t>()},
                                                       {"key", auth::log_tag(row[5].as<std::string>())},
                                                       {"recovery_point", row[3].as<std::string>()},
                                                       {"attempts", row[4].as<int>()}});
  }
  {
    auto conn = pool_.acquire();
    db::Transaction tx(conn.conn(), conn.statement_timeout());
    report.sessions_deleted = conn.exec(tx, kReapSessions, options_.batch_size).affected_rows();
    tx.commit();
  }
  if (report.sessions_deleted > 0) {
    metrics::default_registry()
        .counter("rocket_rides_reaper_sessions_deleted_total", "Expired rider sessions the reaper deleted.")
        .inc(static_cast<double>(report.sessions_deleted));
  }
  if (report.deleted > 0 || report.sessions_deleted > 0) {
    log::info(
        "reaper pass",
        {{"deleted", report.deleted}, {"archived", report.archived}, {"sessions_deleted", report.sessions_deleted}});
    auto& registry = metrics::default_registry();
    registry.counter("rocket_rides_reaper_keys_deleted_total", "Idempotency keys the reaper deleted.")
        .inc(static_cast<double>(report.deleted));
    registry.counter("rocket_rides_reaper_keys_archived_total", "Unfinished keys archived before deletion.")
        .inc(static_cast<double>(report.archived));
  }
  return report;
}

}  // namespace rr::maintenance
