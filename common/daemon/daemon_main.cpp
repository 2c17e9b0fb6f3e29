// The daemons' shared main: `--once` drains, otherwise the metrics endpoint and the loop.
#include "common/daemon/daemon_main.hpp"

#include "common/daemon/metrics_endpoint.hpp"

namespace rr::daemon {

int run_worker(const DaemonArgs& args, const std::string& loop_name, const config::LoopSettings& loop, Worker& worker) {
  if (args.once) {
    drain([&] { return worker.run_once(); });
    return cli::kExitOk;
  }
  MetricsEndpoint metrics(loop.metrics.address, loop.metrics.port);
  LoopOptions options = LoopOptions::from_settings(loop_name, loop);
  options.wait_for_work = worker.wake_up();
  worker.announce_start();
  run_loop(options, [&] { return worker.run_once(); });
  return cli::kExitOk;
}

}  // namespace rr::daemon
