// The one skeleton of the background daemons (completer, reaper, enqueuer): each supplies its
// settings and a Worker with run_once(); the command line (`--once`), the stop signals and
// SHUTDOWN_TIMEOUT, draining until a short batch, the metrics endpoint (METRICS_PORT) and the loop
// are all here, so the three behave alike and a fourth daemon is a settings struct and a pass.
#pragma once

#include <chrono>
#include <concepts>
#include <functional>
#include <string>

#include "common/cli/exit_codes.hpp"
#include "common/cli/run_main.hpp"
#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/daemon/daemon_args.hpp"
#include "common/daemon/drain.hpp"
#include "common/daemon/loop_runner.hpp"
#include "common/daemon/stop_signal.hpp"

namespace rr::daemon {

// What a daemon brings to the skeleton besides its settings.
class Worker {
 public:
  virtual ~Worker() = default;
  // One batch of work. Throwing is a failed pass: the loop logs it and backs off; `--once` fails.
  virtual PassOutcome run_once() = 0;
  // The loop's wake-up while idle (LoopOptions::wait_for_work); empty: it sleeps the idle sleep.
  virtual std::function<bool(std::chrono::milliseconds)> wake_up() { return {}; }
  // Called once in loop mode (not under `--once`), after the metrics endpoint is up and before the
  // first pass: for a daemon's own "started" line.
  virtual void announce_start() {}
};

// The settings shape every daemon shares: its own fields, the loop's knobs in `loop`
// (<PREFIX>_BATCH_SIZE, <PREFIX>_IDLE_SLEEP, <PREFIX>_MAX_BACKOFF, METRICS_PORT, METRICS_ADDRESS,
// SHUTDOWN_TIMEOUT), all parsed and validated once by from_env().
template <typename Settings>
concept DaemonSettings = requires(const config::Environment& env, const Settings& settings) {
  { Settings::from_env(env) } -> std::same_as<Settings>;
  { settings.loop } -> std::convertible_to<const config::LoopSettings&>;
};

struct DaemonIdentity {
  std::string program;    // the binary's name on its log lines ("rocket-rides-completer")
  std::string loop_name;  // the loop's name in log lines and metric labels ("completer")
};

// `--once`: drain and exit 0. Otherwise: the metrics endpoint, then the loop until a stop.
int run_worker(const DaemonArgs& args, const std::string& loop_name, const config::LoopSettings& loop, Worker& worker);

// A daemon's whole main(): parse the line (a usage error exits 2), read the settings (invalid: 2),
// install the stop handlers with SHUTDOWN_TIMEOUT, build the worker from the settings, run it.
template <DaemonSettings Settings, std::derived_from<Worker> DaemonWorker>
requires std::constructible_from<DaemonWorker, const Settings&>
int daemon_main(int argc, char** argv, const DaemonIdentity& identity) {
  return cli::run_main(identity.program, [&]() -> int {
    const DaemonArgs args = parse_daemon_args(argc, argv);
    const Settings settings = Settings::from_env(config::Environment::process());
    install_stop_handlers(settings.loop.shutdown_timeout);
    DaemonWorker worker(settings);
    return run_worker(args, identity.loop_name, settings.loop, worker);
  });
}

}  // namespace rr::daemon
