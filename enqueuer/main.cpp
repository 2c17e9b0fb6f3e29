// rocket-rides-enqueuer: moves committed staged_jobs rows into Sidekiq's Redis queue.
// `--once` drains what is staged now and exits; otherwise it runs until SIGTERM.
#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/cli/run_main.hpp"
#include "common/daemon/daemon_args.hpp"
#include "common/daemon/loop_runner.hpp"
#include "common/daemon/metrics_endpoint.hpp"
#include "common/daemon/stop_signal.hpp"
#include "common/jobs/enqueuer.hpp"

int main(int argc, char** argv) {
  return rr::cli::run_main("rocket-rides-enqueuer", [&] {
    const auto args = rr::daemon::parse_daemon_args(argc, argv);
    const auto config = rr::jobs::EnqueuerConfig::from_env(rr::config::Environment::process());
    rr::daemon::install_stop_handlers(config.loop.shutdown_timeout);
    rr::jobs::Enqueuer enqueuer(config);
    if (args.once) {
      enqueuer.drain();
      return rr::cli::kExitOk;
    }
    rr::daemon::MetricsEndpoint metrics(config.loop.metrics.address, config.loop.metrics.port);
    auto options = rr::daemon::LoopOptions::from_settings("enqueuer", config.loop);
    if (enqueuer.has_wake_up()) {
      options.wait_for_work = [&](std::chrono::milliseconds timeout) { return enqueuer.wait_for_jobs(timeout); };
    }
    rr::log::info(
        "enqueuer started",
        {{"queue", config.queue},
         {"batch_size", config.loop.batch_size},
         {"wake_up", enqueuer.has_wake_up() ? "listen" : "poll"},
         {"sidekiq_timestamps", config.timestamps == rr::jobs::SidekiqTimestamps::seconds ? "seconds" : "milliseconds"},
         {"idle_sleep", config.loop.idle_sleep},
         {"redis", config.redis.describe()},
         {"redis_min_replicas", config.replicas.required}});
    rr::daemon::run_loop(options, [&] { return rr::daemon::PassOutcome{enqueuer.run_once().enqueued > 0}; });
    return rr::cli::kExitOk;
  });
}
