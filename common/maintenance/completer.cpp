// One completer pass: select eligible keys, take each one's fenced lock exactly as the API does, and
// let the shared PhaseRunner drive the key's flow; record what went wrong on keys that did not finish.
#include "common/maintenance/completer.hpp"
#include "common/db/sql_seconds.hpp"

#include <optional>
#include <pqxx/pqxx>
#include <vector>

#include "common/base/log.hpp"
#include "common/db/transaction.hpp"
#include "common/flows/flow_registry.hpp"
#include "common/idempotency/key_acquisition.hpp"
#include "common/metrics/registry.hpp"

namespace rr::maintenance {

namespace {

// This pass's ranges of key ids (sql/functions/completer_advance_scan.sql: a floor below which
// every key is finished or has failed an attempt, kept in idempotency_keys_scan).
const db::Statement kAdvanceScan{"completer_advance_scan", "SELECT * FROM completer_advance_scan($1, $2)"};

// The candidates, oldest first, from three disjoint walks: the primary key from the floor to the
// first key too young to be abandoned, a slice below the floor (the sweep: a key whose commit came
// minutes late), and the small partial index idempotency_keys_retried (keys that failed an attempt,
// attempts > 0, spelled as its predicate so that the planner uses it). No index on unfinished keys:
// one would make every finishing UPDATE a non-HOT one (sql/012). The lock condition is the one
// acquire_key_by_id applies; checking it here too keeps keys that a live request holds out of the
// batch instead of counting them as skipped.
#define RR_COMPLETER_CANDIDATES(RANGE)                                              \
  "SELECT k.id, k.request_method, k.request_path, u.stripe_customer_id "            \
  "FROM idempotency_keys k JOIN users u ON u.id = k.user_id "                       \
  "WHERE " RANGE                                                                    \
  " AND k.response_code IS NULL "                                                   \
  "  AND k.created_at < now() - make_interval(secs => $1) "                         \
  "  AND k.last_run_at < now() - make_interval(secs => $2) "                        \
  "  AND (k.locked_at IS NULL OR k.locked_at < now() - make_interval(secs => $3)) " \
  "ORDER BY k.id LIMIT $4"
const db::Statement kSelectCandidates{
    "completer_select_candidates",
    "(" RR_COMPLETER_CANDIDATES("k.id >= $5 AND k.id < $6 AND k.attempts = 0") ") UNION ALL "
    "(" RR_COMPLETER_CANDIDATES("k.id >= $7 AND k.id < $8 AND k.attempts = 0") ") UNION ALL "
    "(" RR_COMPLETER_CANDIDATES("k.attempts > 0") ") ORDER BY 1 LIMIT $4"};
#undef RR_COMPLETER_CANDIDATES

// Ids below the floor looked at again per pass, in batches of this many times the batch size:
// enough to go over a day of keys in hours, a bounded walk per pass.
constexpr std::int64_t kSweepBatches = 10;

// Fenced on nothing but the id: the runner has already released our lock, and bumping last_run_at
// keeps the key out of the next batches until the threshold passes again.
const db::Statement kRecordFailure{
    "completer_record_failure",
    "UPDATE idempotency_keys SET attempts = attempts + 1, last_error = $2, last_run_at = now() WHERE id = $1"};

constexpr std::size_t kMaxErrorBytes = 1000;

std::string describe(const idempotency::Outcome& outcome) {
  using Kind = idempotency::Outcome::Kind;
  switch (outcome.kind) {
    case Kind::transient:
      return std::string(outcome.retry_reason == idempotency::RetryReason::not_ready ? "not ready: "
                                                                                     : "unavailable: ") +
             outcome.message;
    case Kind::lock_lost:
      return "lock lost: " + outcome.message;
    case Kind::conflict:
      return "conflict: " + outcome.message;
    case Kind::failed:
      return "internal error: " + outcome.message;
    case Kind::finished:
      break;
  }
  return "finished";
}

}  // namespace

std::string short_error(std::string_view message) {
  // Exception texts may carry anything (a server's bytes, a database message in another
  // encoding); invalid UTF-8 would make the UPDATE that records it fail, so keep printable ASCII.
  std::string out;
  out.reserve(std::min(message.size(), kMaxErrorBytes));
  for (char c : message) {
    if (out.size() == kMaxErrorBytes) break;
    auto byte = static_cast<unsigned char>(c);
    out.push_back(byte >= 0x20 && byte < 0x7f ? c : (c == '\n' || c == '\t' ? ' ' : '?'));
  }
  if (out.empty()) out = "unknown error";
  return out;
}

struct Completer::Candidate {
  std::int64_t id = 0;
  std::string request_method;
  std::string request_path;
  std::string stripe_customer_id;
};

Completer::Completer(db::ConnectionPool& pool, const payments::StripeClient& stripe, CompleterOptions options,
                     jobs::EnqueuerWakeup* enqueuer_wakeup)
    : pool_(pool),
      stripe_(stripe),
      options_(std::move(options)),
      enqueuer_wakeup_(enqueuer_wakeup),
      runner_(pool, options_.runner) {}

CompleterReport Completer::run_once() {
  std::vector<Candidate> candidates;
  {
    auto conn = pool_.acquire();
    db::Transaction tx(conn.conn(), conn.statement_timeout());
    auto scan = conn.exec(tx, kAdvanceScan, db::seconds_of(options_.min_age), options_.batch_size * kSweepBatches);
    auto range = [&](int column) { return scan[0][column].as<std::int64_t>(); };
    auto rows =
        conn.exec(tx, kSelectCandidates, db::seconds_of(options_.min_age), db::seconds_of(options_.last_run_threshold),
                  db::seconds_of(options_.lock_timeout), options_.batch_size, range(0), range(1), range(2), range(3));
    candidates.reserve(rows.size());
    for (const auto& row : rows) {
      candidates.push_back(
          {row[0].as<std::int64_t>(), row[1].as<std::string>(), row[2].as<std::string>(), row[3].as<std::string>()});
    }
    tx.commit();  // the floor moved
  }

  CompleterReport report;
  report.candidates = static_cast<std::int64_t>(candidates.size());
  for (const auto& candidate : candidates) {
    if (options_.stop_requested && options_.stop_requested()) break;
    try {
      switch (complete(candidate)) {
        case Result::completed:
          ++report.completed;
          break;
        case Result::failed:
          ++report.failed;
          break;
        case Result::skipped:
          ++report.skipped;
          break;
      }
    } catch (const idempotency::SimulatedCrash&) {
      throw;  // a test's dead process does nothing more
    } catch (const pqxx::broken_connection&) {
      throw;  // the database is gone: end the pass, the loop backs off; touched keys stay eligible
    } catch (const std::exception& e) {
      ++report.failed;
      std::string error = short_error(std::string("internal error: ") + e.what());
      log::error("completer failed on a key", {{"key_id", candidate.id}, {"error", error}});
      record_failure(candidate.id, error);
    }
  }

  if (report.candidates > 0) {
    log::info("completer pass",
              {{"completed", report.completed}, {"failed", report.failed}, {"skipped", report.skipped}});
    auto& registry = metrics::default_registry();
    const char* help = "Abandoned keys the completer handled, by result.";
    registry.counter("rocket_rides_completer_keys_total", help, {{"result", "completed"}})
        .inc(static_cast<double>(report.completed));
    registry.counter("rocket_rides_completer_keys_total", help, {{"result", "failed"}})
        .inc(static_cast<double>(report.failed));
    registry.counter("rocket_rides_completer_keys_total", help, {{"result", "skipped"}})
        .inc(static_cast<double>(report.skipped));
  }
  return report;
}

Completer::Result Completer::complete(const Candidate& candidate) {
  // The registry the API routes by finds the key's flow from its stored method and path.
  auto found = flows::find_flow(candidate.request_method, candidate.request_path);
  std::optional<idempotency::KeyRow> key;
  {
    auto conn = pool_.acquire();
    key = idempotency::acquire_key_by_id(conn, candidate.id, options_.lock_timeout);
    // Someone (the API on a client's retry, another completer) took or finished it first.
    if (!key) return Result::skipped;
    // Locked before this check so that two completers never both count the attempt.
    if (!found) idempotency::unlock_key(conn, *key);
  }
  if (!found) {
    std::string error = short_error("no flow for request " + candidate.request_method + " " + candidate.request_path);
    log::error("completer cannot drive key", {{"key_id", candidate.id}, {"error", error}});
    record_failure(candidate.id, error);
    return Result::failed;
  }

  auto flow = found->flow->make_flow({stripe_, candidate.stripe_customer_id, enqueuer_wakeup_});
  auto outcome = runner_.run(flow, std::move(*key));
  if (outcome.kind == idempotency::Outcome::Kind::finished) {
    log::debug("completer finished key",
               {{"key_id", candidate.id}, {"flow", found->flow->name}, {"code", outcome.result.code}});
    return Result::completed;
  }
  std::string error = short_error(describe(outcome));
  log::warn("completer could not finish key", {{"key_id", candidate.id}, {"error", error}});
  record_failure(candidate.id, error);
  return Result::failed;
}

void Completer::record_failure(std::int64_t key_id, const std::string& error) {
  try {
    auto conn = pool_.acquire();
    db::Transaction tx(conn.conn(), conn.statement_timeout());
    conn.exec(tx, kRecordFailure, key_id, error);
    tx.commit();
  } catch (const pqxx::broken_connection&) {
    throw;
  } catch (const std::exception& e) {
    // The acquisition already moved last_run_at, so the key still waits out the threshold.
    log::warn("completer could not record a failed attempt", {{"key_id", key_id}, {"error", e.what()}});
  }
}

}  // namespace rr::maintenance
