// One reconciliation pass over a window: the provider's charges and refunds matched against the
// ledger (provider_charges, provider_refunds), the rides and their keys. What a restore lost is
// rebuilt from the provider's metadata, what cannot be is refunded or left for a person, and every
// discrepancy becomes a row of reconciliation_breaks. Each repair commits with its break row, so
// a pass that fails halfway (the provider or the database gone) leaves only finished repairs
// behind, and the next pass finds them matched: it resumes and never rebuilds twice.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/db/connection_pool.hpp"
#include "common/payments/provider_listing.hpp"
#include "common/payments/stripe_client.hpp"
#include "common/reconciliation/reconcile_settings.hpp"

namespace rr::reconciliation {

struct PassWindow {
  std::int64_t since = 0;  // unix seconds, inclusive
  std::int64_t until = 0;  // unix seconds, inclusive
  // The window ends at the pass's start (no --until): a fence whose start the window covers reopens.
  bool until_now = true;
};

struct PassOptions {
  bool dry_run = false;  // read and report, write nothing (at the provider or here)
  UnrebuildablePolicy unrebuildable = UnrebuildablePolicy::refund;
  std::chrono::milliseconds refund_grace{std::chrono::hours(1)};
  std::string role = "reconcile";  // who runs the pass: the lease's holder is lease_holder(role, pid)
};

// The reconciliation lease's holder for a pass that ROLE ("completer", "reconcile") runs in process
// PID on this host. One per process: the lease is taken when it is free, expired, or the taker's
// own, so a holder that two completers shared would let both run a pass at once.
std::string lease_holder(std::string_view role, long pid);

struct BreakLine {
  std::string kind;
  std::string provider_object_id;
  std::optional<std::int64_t> ride_id;
  std::string action;
  std::string details;  // JSON object
};

struct PassReport {
  std::int64_t matched = 0;
  std::int64_t rebuilt = 0;                  // rides, keys, cancellations or ledger rows written back
  std::int64_t refunded = 0;                 // charges refunded because they could not be rebuilt
  std::vector<BreakLine> breaks;             // new this pass (with dry_run: what would be recorded)
  std::vector<std::string> reopened_fences;  // the reasons of the write fences this pass reopened
};

// Another pass holds the lease (the completer's loop, or an operator's command).
class PassAlreadyRunning : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The pass could not finish: says why. What it finished before stays finished.
class PassFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ReconciliationPass {
 public:
  ReconciliationPass(db::ConnectionPool& pool, const payments::ProviderListing& listing,
                     const payments::StripeClient& provider, PassOptions options);

  // Throws PassAlreadyRunning, PassFailed (the provider failed or hung; a repair was refused), or
  // the database's own errors.
  PassReport run(const PassWindow& window);

 private:
  struct Context;  // pass_context.hpp
  void reconcile_charge(Context& context, const payments::ListedCharge& charge);
  void unrebuildable_charge(Context& context, const payments::ListedCharge& charge, const std::string& kind,
                            const std::string& reason, std::optional<std::int64_t> ride_id);
  void reconcile_refund(Context& context, const payments::ListedRefund& refund);
  void check_ledger(Context& context, const PassWindow& window);
  void move_sequences(Context& context, const std::vector<payments::ListedCharge>& charges,
                      const std::vector<payments::ListedRefund>& refunds);

  db::ConnectionPool& pool_;
  const payments::ProviderListing& listing_;
  const payments::StripeClient& provider_;
  PassOptions options_;
};

}  // namespace rr::reconciliation
