// rocket-rides-simulator: demo traffic from well-behaved clients (see tools/simulator/simulator.hpp).
#include "common/base/log.hpp"
#include "common/cli/program_info.hpp"
#include "common/cli/run_main.hpp"
#include "common/daemon/stop_signal.hpp"
#include "tools/simulator/simulator.hpp"

namespace {

constexpr rr::cli::ProgramInfo kProgram{"rocket-rides-simulator", "demo traffic for the Rocket Rides API",
                                        R"(Usage: rocket-rides-simulator

Well-behaved clients book rides at SIMULATOR_RATE per second against SIMULATOR_API_URL with
SIMULATOR_TOKEN, retrying with the same Idempotency-Key; a share (SIMULATOR_ABANDON_RATE) give
up midway, which the completer then finishes. Runs until SIGINT or SIGTERM, or
SIMULATOR_MAX_RIDES rides.
)",
                                        "",
                                        R"(  SIMULATOR_API_URL, SIMULATOR_TOKEN, SIMULATOR_RATE, SIMULATOR_ABANDON_RATE,
  SIMULATOR_CONCURRENCY, SIMULATOR_MAX_RIDES.
)"};

}  // namespace

int main(int argc, char** argv) {
  if (auto answered = rr::cli::answer_version_or_help(argc, argv, kProgram)) return *answered;
  return rr::cli::run_main(kProgram.name, [] {
    auto settings = rr::client::SimulatorSettings::from_env(rr::config::Environment::process());
    rr::daemon::install_stop_handlers();
    auto report = rr::client::run_simulator(settings);
    rr::log::info("simulator stopped", {{"created", report.created},
                                        {"declined", report.declined},
                                        {"abandoned", report.abandoned},
                                        {"other", report.other},
                                        {"retries", report.retries}});
    return 0;
  });
}
