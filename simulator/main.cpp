// rocket-rides-simulator: demo traffic from well-behaved clients (see common/client/simulator.hpp).
#include "common/base/log.hpp"
#include "common/cli/run_main.hpp"
#include "common/client/simulator.hpp"
#include "common/daemon/stop_signal.hpp"

int main() {
  return rr::cli::run_main("rocket-rides-simulator", [] {
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
