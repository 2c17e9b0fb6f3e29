// rocket-rides-completer: finishes requests whose clients went away, through the API's own workflow
// code (common/maintenance/completer.hpp). `--once` drains what is eligible now and exits; the rest
// of the daemon (signals, the loop, METRICS_PORT) is the shared skeleton, common/daemon/daemon_main.hpp.
#include "common/cli/program_info.hpp"
#include "common/daemon/daemon_main.hpp"
#include "common/maintenance/completer.hpp"
#include "common/maintenance/completer_reconciliation.hpp"
#include "common/maintenance/completer_settings.hpp"
#include "common/payments/provider_key_fingerprint.hpp"

namespace {

// Keys are driven one at a time, and each step holds at most one connection; a reconciliation
// pass holds one more while it runs between batches.
constexpr std::size_t kPoolSize = 2;
constexpr std::chrono::seconds kCheckoutTimeout{10};

class CompleterWorker final : public rr::daemon::Worker {
 public:
  explicit CompleterWorker(const rr::maintenance::CompleterSettings& settings)
      : provider_key_checked_(check_provider_key(settings)),
        pool_(settings.database.url, settings.database.session, kPoolSize, kCheckoutTimeout),
        stripe_(settings.payment),
        options_(with_stop(settings.completer_options())),
        enqueuer_wakeup_(rr::jobs::make_enqueuer_wakeup(settings.enqueuer_wakeup, settings.database.url)),
        completer_(pool_, stripe_, options_, enqueuer_wakeup_.get()),
        reconciliation_(pool_, stripe_, settings.payment, settings.reconcile) {}

  // Only a full batch repeats at once: keys a pass touched are not selected again (finished, or
  // last_run_at moved), so a short batch means none is eligible now.
  rr::daemon::PassOutcome run_once() override {
    // Between batches, at its own pace (RECONCILE_INTERVAL): reconciliation never delays a batch
    // by more than one pass.
    reconciliation_.run_if_due();
    bool full = completer_.run_once().full_batch(options_.batch_size);
    return {full, full};
  }

 private:
  // Before anything else: a completer whose PROVIDER_KEY_SECRET is not the deployment's would
  // retry charges under other provider keys (common/payments/provider_key_fingerprint.hpp).
  static bool check_provider_key(const rr::maintenance::CompleterSettings& settings) {
    rr::payments::check_provider_key_at_start(settings.database, settings.payment);
    return true;
  }
  static rr::maintenance::CompleterOptions with_stop(rr::maintenance::CompleterOptions options) {
    options.stop_requested = rr::daemon::stop_requested;
    return options;
  }

  bool provider_key_checked_;
  rr::db::ConnectionPool pool_;
  rr::payments::StripeClient stripe_;
  rr::maintenance::CompleterOptions options_;
  std::unique_ptr<rr::jobs::EnqueuerWakeup> enqueuer_wakeup_;  // null with ENQUEUER_WAKEUP_DEBOUNCE=0
  rr::maintenance::Completer completer_;
  rr::maintenance::CompleterReconciliation reconciliation_;
};

constexpr rr::cli::ProgramInfo kProgram{
    "rocket-rides-completer", "finishes requests whose clients went away",
    R"(Usage: rocket-rides-completer [--once]

Drives idempotency keys left unfinished for COMPLETER_MIN_AGE seconds to completion through the
API's own phases, and reconciles a sliding window against the payment provider.
Runs until SIGTERM, which finishes in-flight work within SHUTDOWN_TIMEOUT.
)",
    R"(  --once     do the work there is now, then exit (for cron, scripts and tests)
)",
    rr::cli::kSettingsFromEnvironment};

}  // namespace

int main(int argc, char** argv) {
  if (auto answered = rr::cli::answer_version_or_help(argc, argv, kProgram)) return *answered;
  return rr::daemon::daemon_main<rr::maintenance::CompleterSettings, CompleterWorker>(
      argc, argv, {std::string(kProgram.name), "completer"});
}
