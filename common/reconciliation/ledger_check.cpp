// The other direction: the ledger's own charges and refunds recorded in the window, each looked
// for at the provider. One the listing did not carry (its provider time fell just outside the
// window) is read by id; one the provider does not know, or whose amount, currency or customer
// differs, is a break for a person.
#include <set>

#include "common/reconciliation/pass_context.hpp"
#include "common/reconciliation/reconciliation_statements.hpp"

namespace rr::reconciliation {

void ReconciliationPass::check_ledger(Context& context, const PassWindow& window) {
  // The listed ids were matched already; only the others are looked up.
  const std::set<std::string>& listed = context.listed_ids;
  auto charges = context.read(statements::kLedgerChargesIn, window.since, window.until);
  auto refunds = context.read(statements::kLedgerRefundsIn, window.since, window.until);
  for (const auto& row : charges) {
    auto id = row[0].as<std::string>();
    if (listed.contains(id)) continue;
    std::optional<payments::ListedCharge> found;
    try {
      found = listing_.charge(id);
    } catch (const payments::ListingFailed& e) {
      throw PassFailed(e.what());
    }
    if (!found) {
      context.record({"charge_unknown_to_provider", id, row[1].as<std::int64_t>(), "left_for_review",
                      Details().integer("amount", row[2].as<std::int64_t>()).json()});
      continue;
    }
    reconcile_charge(context, *found);
  }
  for (const auto& row : refunds) {
    auto id = row[0].as<std::string>();
    if (listed.contains(id)) continue;
    std::optional<payments::ListedRefund> found;
    try {
      found = listing_.refund(id);
    } catch (const payments::ListingFailed& e) {
      throw PassFailed(e.what());
    }
    if (!found) {
      context.record({"refund_unknown_to_provider", id, row[1].as<std::int64_t>(), "left_for_review",
                      Details().integer("amount", row[2].as<std::int64_t>()).json()});
      continue;
    }
    reconcile_refund(context, *found);
  }
}

}  // namespace rr::reconciliation
