// The pass as a whole: the lease, the listing read whole before anything is changed, the id
// sequences moved past every id the provider's records carry, the charges, the refunds, the
// ledger's own rows, and the write fences the window covered.
#include "common/reconciliation/reconciliation_pass.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>

#include "common/base/log.hpp"
#include "common/reconciliation/charge_metadata.hpp"
#include "common/reconciliation/pass_context.hpp"
#include "common/reconciliation/reconciliation_statements.hpp"

namespace rr::reconciliation {
namespace {

// Long enough for a pass over a day of a busy account; a pass that dies leaves it to expire.
constexpr int kLeaseSeconds = 3600;

}  // namespace

std::string lease_holder(std::string_view role, long pid) {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return std::string(role) + " on " + (host[0] != '\0' ? host.data() : "unknown-host") + " pid " + std::to_string(pid);
}

Details& Details::text(const char* name, const std::string& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  fields_.emplace_back(name, std::string(buffer.GetString(), buffer.GetSize()));
  return *this;
}

Details& Details::integer(const char* name, std::int64_t value) {
  fields_.emplace_back(name, std::to_string(value));
  return *this;
}

std::string Details::json() const {
  std::string out = "{";
  for (const auto& [name, value] : fields_) {
    if (out.size() > 1) out += ',';
    out += '"' + name + "\":" + value;
  }
  return out + "}";
}

bool ReconciliationPass::Context::record(const BreakLine& line, const std::function<void(db::Transaction&)>& repair) {
  std::optional<std::string> object;
  if (!line.provider_object_id.empty()) object = line.provider_object_id;
  bool added;
  if (options.dry_run) {
    added = read(statements::kBreakRecorded, line.kind, object, line.ride_id, line.action).empty();
  } else {
    db::Transaction tx(conn.conn(), conn.statement_timeout());
    if (repair) repair(tx);
    added =
        !conn.exec(tx, statements::kRecordBreak, line.kind, object, line.ride_id, line.action, line.details).empty();
    tx.commit();
  }
  if (added) {
    report.breaks.push_back(line);
    log::warn("reconciliation break", {{"kind", line.kind},
                                       {"provider_object", line.provider_object_id},
                                       {"ride_id", line.ride_id ? std::to_string(*line.ride_id) : std::string()},
                                       {"action", line.action},
                                       {"dry_run", options.dry_run}});
  }
  return added;
}

ReconciliationPass::ReconciliationPass(db::ConnectionPool& pool, const payments::ProviderListing& listing,
                                       const payments::StripeClient& provider, PassOptions options)
    : pool_(pool), listing_(listing), provider_(provider), options_(std::move(options)) {}

PassReport ReconciliationPass::run(const PassWindow& window) {
  auto started = std::chrono::system_clock::now();
  double started_seconds = std::chrono::duration<double>(started.time_since_epoch()).count();
  auto conn = pool_.acquire();
  PassReport report;
  Context context{conn, options_, report, static_cast<std::int64_t>(started_seconds), {}};

  const std::string holder = lease_holder(options_.role, static_cast<long>(::getpid()));
  // A dry run writes nothing, not even the lease: it may run beside a real pass.
  if (!options_.dry_run && context.read(statements::kTakeLease, holder, kLeaseSeconds).empty()) {
    throw PassAlreadyRunning("another reconciliation pass holds the lease (reconciliation_lease)");
  }
  std::optional<std::int64_t> finished_until;
  try {
    // Read whole before anything changes: a provider that fails or hangs mid-listing stops the
    // pass here, with nothing done.
    std::vector<payments::ListedCharge> charges;
    std::vector<payments::ListedRefund> refunds;
    try {
      charges = listing_.charges(window.since, window.until);
      refunds = listing_.refunds(window.since, window.until);
    } catch (const payments::ListingFailed& e) {
      throw PassFailed(e.what());
    }
    for (const auto& charge : charges) context.listed_ids.insert(charge.id);
    for (const auto& refund : refunds) context.listed_ids.insert(refund.id);
    move_sequences(context, charges, refunds);
    // Oldest first: a charge is matched (or rebuilt) before the refunds of it.
    std::ranges::reverse(charges);
    std::ranges::reverse(refunds);
    for (const auto& charge : charges) reconcile_charge(context, charge);
    for (const auto& refund : refunds) reconcile_refund(context, refund);
    check_ledger(context, window);
    finished_until = window.until;
    if (!options_.dry_run && window.until_now) {
      auto reopened = context.read(statements::kReopenFences, window.since, started_seconds);
      for (const auto& row : reopened) {
        report.reopened_fences.push_back(row[1].as<std::string>());
        log::info("writes reopened: reconciliation covered the fence's window",
                  {{"fence_id", row[0].as<std::int64_t>()}, {"reason", row[1].as<std::string>()}});
      }
    }
  } catch (...) {
    if (!options_.dry_run) {
      try {
        context.read(statements::kReleaseLease, holder, std::optional<std::int64_t>());
      } catch (const std::exception& e) {
        log::warn("reconciliation lease not released (it expires)", {{"error", e.what()}});
      }
    }
    throw;
  }
  if (!options_.dry_run) context.read(statements::kReleaseLease, holder, finished_until);
  return report;
}

// No id a client saw is given to another ride: the sequences move past the largest ride and
// user ids the provider's records carry, before any ride is rebuilt (setval never goes back).
void ReconciliationPass::move_sequences(Context& context, const std::vector<payments::ListedCharge>& charges,
                                        const std::vector<payments::ListedRefund>& refunds) {
  std::int64_t max_ride = 0, max_user = 0;
  auto consider = [&](const payments::ProviderMetadata& metadata) {
    max_ride = std::max(max_ride, positive_id(metadata, "rr_ride_id").value_or(0));
    max_user = std::max(max_user, positive_id(metadata, "rr_user_id").value_or(0));
  };
  for (const auto& charge : charges) consider(charge.metadata);
  for (const auto& refund : refunds) consider(refund.metadata);
  if (options_.dry_run) return;
  if (max_ride > 0) context.read(statements::kSequencePast, std::string("rides_id_seq"), max_ride);
  if (max_user > 0) context.read(statements::kSequencePast, std::string("users_id_seq"), max_user);
}

}  // namespace rr::reconciliation
