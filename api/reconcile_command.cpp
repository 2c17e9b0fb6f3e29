// `reconcile --since TIME [--until TIME] [--dry-run]`: one reconciliation pass against the
// provider over a window, as after a restore (docs/operations.md, "Reconciliation"). Prints
// `matched=N rebuilt=N refunded=N breaks=N` and then one line per new break.
#include <chrono>
#include <cstdio>

#include "api/admin_commands.hpp"
#include "api/command_flags.hpp"
#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/cli/run_main.hpp"
#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/db/connection_pool.hpp"
#include "common/payments/provider_key_fingerprint.hpp"
#include "common/payments/provider_listing.hpp"
#include "common/payments/stripe_client.hpp"
#include "common/reconciliation/reconcile_settings.hpp"
#include "common/reconciliation/reconciliation_pass.hpp"
#include "common/reconciliation/rfc3339.hpp"

namespace rr::api {
namespace {

constexpr const char* kReconcileUsage = "usage: reconcile --since TIME [--until TIME] [--dry-run] (TIME in RFC 3339)";

std::int64_t time_flag(const Flags& flags, const std::string& name, std::int64_t fallback) {
  auto text = flags.find(name);
  if (!text) return fallback;
  auto time = reconciliation::parse_rfc3339(*text);
  if (!time) {
    throw cli::UsageError("reconcile: --" + name + " \"" + *text +
                          "\" is not an RFC 3339 time (e.g. 2026-11-27T12:00:00Z)");
  }
  return time->unix_seconds;
}

}  // namespace

int run_reconcile_command(const std::vector<std::string>& args) {
  // args[0] is "reconcile".
  auto flags = Flags::parse(args, 1, {{"since"}, {"until"}, {"dry-run"}}, "reconcile");
  auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  reconciliation::PassWindow window;
  window.since = time_flag(flags, "since", 0);
  window.until = time_flag(flags, "until", now.count());
  window.until_now = !flags.has("until");
  if (window.until < window.since) throw cli::UsageError("reconcile: --until is before --since");

  auto env = config::Environment::process();
  auto database = config::DatabaseSettings::from_env(env);
  auto payment = config::PaymentSettings::from_env(env);
  auto settings = reconciliation::ReconcileSettings::from_env(env);
  // It derives provider keys to match charges and refunds: with another secret it would match none.
  payments::check_provider_key_at_start(database, payment);
  db::ConnectionPool pool(database.url, database.session, 1, std::chrono::seconds(10));
  payments::ProviderListing listing(payment);
  payments::StripeClient provider(payment);
  reconciliation::PassOptions options;
  options.dry_run = flags.has("dry-run");
  options.unrebuildable = settings.unrebuildable;
  options.refund_grace = settings.refund_grace;
  options.role = "reconcile command";
  reconciliation::ReconciliationPass pass(pool, listing, provider, options);

  reconciliation::PassReport report;
  try {
    report = pass.run(window);
  } catch (const reconciliation::PassAlreadyRunning& e) {
    log::error("reconciliation not run", {{"problem", e.what()}});
    return cli::kExitRefused;
  } catch (const reconciliation::PassFailed& e) {
    log::error("reconciliation failed; what it finished stays finished, run it again to resume",
               {{"problem", e.what()}});
    return cli::kExitFailure;
  }
  std::printf("%smatched=%lld rebuilt=%lld refunded=%lld breaks=%zu\n", options.dry_run ? "dry-run: " : "",
              static_cast<long long>(report.matched), static_cast<long long>(report.rebuilt),
              static_cast<long long>(report.refunded), report.breaks.size());
  for (const auto& line : report.breaks) {
    std::printf("break kind=%s object=%s ride=%s action=%s%s details=%s\n", line.kind.c_str(),
                line.provider_object_id.empty() ? "-" : line.provider_object_id.c_str(),
                line.ride_id ? std::to_string(*line.ride_id).c_str() : "-", options.dry_run ? "would:" : "",
                line.action.c_str(), line.details.c_str());
  }
  for (const auto& reason : report.reopened_fences) std::printf("writes reopened: %s\n", reason.c_str());
  return cli::kExitOk;
}

}  // namespace rr::api
