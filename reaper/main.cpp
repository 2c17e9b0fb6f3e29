// rocket-rides-reaper: deletes idempotency keys past the horizon in short batches, archiving the
// unfinished ones (common/maintenance/reaper.hpp). `--once` reaps until no full batch remains.
#include "common/cli/exit_codes.hpp"
#include "common/cli/run_main.hpp"
#include "common/daemon/daemon_args.hpp"
#include "common/daemon/loop_runner.hpp"
#include "common/daemon/metrics_endpoint.hpp"
#include "common/daemon/stop_signal.hpp"
#include "common/maintenance/reaper.hpp"
#include "common/maintenance/reaper_settings.hpp"

namespace {
constexpr std::size_t kPoolSize = 1;
constexpr std::chrono::seconds kCheckoutTimeout{10};
}  // namespace

int main(int argc, char** argv) {
  return rr::cli::run_main("rocket-rides-reaper", [&]() -> int {
    auto args = rr::daemon::parse_daemon_args(argc, argv);
    auto settings = rr::maintenance::ReaperSettings::from_env(rr::config::Environment::process());
    rr::daemon::install_stop_handlers(settings.loop.shutdown_timeout);

    rr::db::ConnectionPool pool(settings.database.url, settings.database.session, kPoolSize, kCheckoutTimeout);
    auto options = settings.reaper_options();
    rr::maintenance::Reaper reaper(pool, options);

    // A full batch means more may be waiting: the loop repeats at once; a partial one means done.
    auto pass = [&] { return rr::daemon::PassOutcome{reaper.run_once().full_batch(options.batch_size)}; };
    if (args.once) {
      while (pass().did_work && !rr::daemon::stop_requested()) {
      }
      return rr::cli::kExitOk;
    }
    rr::daemon::MetricsEndpoint metrics(settings.loop.metrics.address, settings.loop.metrics.port);
    rr::daemon::run_loop(rr::daemon::LoopOptions::from_settings("reaper", settings.loop), pass);
    return rr::cli::kExitOk;
  });
}
