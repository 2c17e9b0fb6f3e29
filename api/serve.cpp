// The server's lifecycle: configure, listen, tell systemd, wait for a signal, drain, exit.
#include "api/serve.hpp"

#include <signal.h>

#include <thread>

#include "common/api/app.hpp"
#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/config/environment.hpp"
#include "common/http/server.hpp"

namespace rr::api {
namespace {

// Blocks SIGTERM/SIGINT in every thread (threads inherit the mask) and waits for them here, so
// no handler runs in a random thread.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

int run_server() {
  auto settings = ApiSettings::from_env(config::Environment::process());
  sigset_t stop_signals = block_stop_signals();

  App app(settings);
  http::ServerOptions options;
  options.address = settings.bind_address;
  options.port = settings.port;
  options.worker_threads = settings.worker_threads;
  http::Server server(options, [&app](const http::Request& request) { return app.handle(request); });
  server.start();
  log::info("listening", {{"address", settings.bind_address}, {"port", server.port()},
                          {"workers", settings.worker_threads}, {"pool_size", settings.database_pool_size}});

  int signo = 0;
  sigwait(&stop_signals, &signo);
  log::info("stopping: no new connections, finishing in-flight requests",
            {{"signal", signo}, {"in_flight", server.in_flight()}});
  server.stop_accepting();
  // A second signal while draining exits at once.
  std::thread second_signal([stop_signals]() mutable {
    int again = 0;
    sigwait(&stop_signals, &again);
    log::warn("second signal: exiting now", {{"signal", again}});
    std::_Exit(cli::kExitFailure);
  });
  second_signal.detach();
  bool drained = server.wait_idle(settings.shutdown_timeout);
  server.stop();
  if (!drained) {
    log::warn("shutdown timeout passed with requests still in flight");
    return cli::kExitFailure;
  }
  log::info("stopped");
  return cli::kExitOk;
}

}  // namespace rr::api
