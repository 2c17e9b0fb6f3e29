// rocket-rides-enqueuer: moves committed staged_jobs rows into Sidekiq's Redis queue.
// `--once` drains what is staged now and exits; otherwise it runs until SIGTERM. The rest of the
// daemon is the shared skeleton, common/daemon/daemon_main.hpp.
#include "common/base/log.hpp"
#include "common/cli/program_info.hpp"
#include "common/daemon/daemon_main.hpp"
#include "common/jobs/enqueuer.hpp"

namespace {

class EnqueuerWorker final : public rr::daemon::Worker {
 public:
  explicit EnqueuerWorker(const rr::jobs::EnqueuerSettings& config) : enqueuer_(config) {}

  // Any work repeats the pass at once (more rows may have been staged meanwhile); `--once` stops
  // at the first short batch.
  rr::daemon::PassOutcome run_once() override {
    auto report = enqueuer_.run_once();
    return {report.enqueued > 0, report.full_batch(config().loop.batch_size)};
  }

  // A NOTIFY from the staging transaction wakes the loop; without a LISTEN it polls.
  std::function<bool(std::chrono::milliseconds)> wake_up() override {
    if (!enqueuer_.has_wake_up()) return {};
    return [this](std::chrono::milliseconds timeout) { return enqueuer_.wait_for_jobs(timeout); };
  }

  void announce_start() override {
    const auto& c = config();
    rr::log::info(
        "enqueuer started",
        {{"queue", c.queue},
         {"batch_size", c.loop.batch_size},
         {"wake_up", enqueuer_.has_wake_up() ? "listen" : "poll"},
         {"sidekiq_timestamps", c.timestamps == rr::jobs::SidekiqTimestamps::seconds ? "seconds" : "milliseconds"},
         {"idle_sleep", c.loop.idle_sleep},
         {"redis", c.redis.describe()},
         {"redis_min_replicas", c.replicas.required}});
  }

 private:
  const rr::jobs::EnqueuerSettings& config() const { return enqueuer_.config(); }

  rr::jobs::Enqueuer enqueuer_;
};

constexpr rr::cli::ProgramInfo kProgram{
    "rocket-rides-enqueuer", "moves staged jobs from PostgreSQL into Redis in Sidekiq's format",
    R"(Usage: rocket-rides-enqueuer [--once]

Moves committed staged_jobs rows into the Sidekiq queue in Redis (REDIS_URL or Sentinel), at
least once; woken by NOTIFY from the staging transaction or polling every ENQUEUER_IDLE_SLEEP.
Runs until SIGTERM, which finishes in-flight work within SHUTDOWN_TIMEOUT.
)",
    R"(  --once     do the work there is now, then exit (for cron, scripts and tests)
)",
    rr::cli::kSettingsFromEnvironment};

}  // namespace

int main(int argc, char** argv) {
  if (auto answered = rr::cli::answer_version_or_help(argc, argv, kProgram)) return *answered;
  return rr::daemon::daemon_main<rr::jobs::EnqueuerSettings, EnqueuerWorker>(argc, argv,
                                                                             {std::string(kProgram.name), "enqueuer"});
}
