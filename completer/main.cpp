// rocket-rides-completer: finishes requests whose clients went away, through the API's own workflow
// code (common/maintenance/completer.hpp). `--once` drains what is eligible now and exits.
#include "common/cli/exit_codes.hpp"
#include "common/cli/run_main.hpp"
#include "common/daemon/daemon_args.hpp"
#include "common/daemon/loop_runner.hpp"
#include "common/daemon/metrics_endpoint.hpp"
#include "common/daemon/stop_signal.hpp"
#include "common/maintenance/completer.hpp"
#include "common/maintenance/completer_settings.hpp"

namespace {
// Keys are driven one at a time, and each step holds at most one connection.
constexpr std::size_t kPoolSize = 2;
constexpr std::chrono::seconds kCheckoutTimeout{10};
}  // namespace

int main(int argc, char** argv) {
  return rr::cli::run_main("rocket-rides-completer", [&]() -> int {
    auto args = rr::daemon::parse_daemon_args(argc, argv);
    auto settings = rr::maintenance::CompleterSettings::from_env(rr::config::Environment::process());
    rr::daemon::install_stop_handlers(settings.loop.shutdown_timeout);

    rr::db::ConnectionPool pool(settings.database.url, settings.database.session, kPoolSize, kCheckoutTimeout);
    rr::payments::StripeClient stripe(settings.payment);
    auto options = settings.completer_options();
    options.stop_requested = rr::daemon::stop_requested;
    rr::maintenance::Completer completer(pool, stripe, options);

    // Keys a pass touched are not selected again (finished, or last_run_at moved), so repeating
    // while batches come back full drains the backlog and ends.
    auto pass = [&] { return rr::daemon::PassOutcome{completer.run_once().full_batch(options.batch_size)}; };
    if (args.once) {
      while (pass().did_work && !rr::daemon::stop_requested()) {
      }
      return rr::cli::kExitOk;
    }
    rr::daemon::MetricsEndpoint metrics(settings.loop.metrics.address, settings.loop.metrics.port);
    rr::daemon::run_loop(rr::daemon::LoopOptions::from_settings("completer", settings.loop), pass);
    return rr::cli::kExitOk;
  });
}
