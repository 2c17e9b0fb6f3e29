// rocket-rides-reaper: deletes idempotency keys past the horizon in short batches, archiving the
// unfinished ones (common/maintenance/reaper.hpp). `--once` reaps until no full batch remains; the
// rest of the daemon is the shared skeleton, common/daemon/daemon_main.hpp.
#include "common/cli/program_info.hpp"
#include "common/daemon/daemon_main.hpp"
#include "common/maintenance/reaper.hpp"
#include "common/maintenance/reaper_settings.hpp"

namespace {

constexpr std::size_t kPoolSize = 1;
constexpr std::chrono::seconds kCheckoutTimeout{10};

class ReaperWorker final : public rr::daemon::Worker {
 public:
  explicit ReaperWorker(const rr::maintenance::ReaperSettings& settings)
      : pool_(settings.database.url, settings.database.session, kPoolSize, kCheckoutTimeout),
        options_(settings.reaper_options()),
        reaper_(pool_, options_) {}

  // A full batch means more may be waiting: the loop repeats at once; a partial one means done.
  rr::daemon::PassOutcome run_once() override {
    bool full = reaper_.run_once().full_batch(options_.batch_size);
    return {full, full};
  }

 private:
  rr::db::ConnectionPool pool_;
  rr::maintenance::ReaperOptions options_;
  rr::maintenance::Reaper reaper_;
};

constexpr rr::cli::ProgramInfo kProgram{
    "rocket-rides-reaper", "deletes old idempotency keys, archiving unfinished ones",
    R"(Usage: rocket-rides-reaper [--once]

Deletes idempotency keys older than REAPER_MAX_AGE seconds (72 hours) in small batches,
archiving the ones that never finished, and the rider pages' expired sessions.
Runs until SIGTERM, which finishes in-flight work within SHUTDOWN_TIMEOUT.
)",
    R"(  --once     do the work there is now, then exit (for cron, scripts and tests)
)",
    rr::cli::kSettingsFromEnvironment};

}  // namespace

int main(int argc, char** argv) {
  if (auto answered = rr::cli::answer_version_or_help(argc, argv, kProgram)) return *answered;
  return rr::daemon::daemon_main<rr::maintenance::ReaperSettings, ReaperWorker>(argc, argv,
                                                                                {std::string(kProgram.name), "reaper"});
}
