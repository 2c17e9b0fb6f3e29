// The server's lifecycle: configure, listen, tell systemd, wait for a signal, drain (/readyz 503
// while still serving), stop accepting, finish in-flight requests, exit.
#include "api/serve.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/api_app/app.hpp"
#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/config/environment.hpp"
#include "common/daemon/metrics_endpoint.hpp"
#include "common/daemon/stop_signal.hpp"
#include "common/daemon/systemd_notify.hpp"
#include "common/http/client.hpp"
#include "common/http/server.hpp"
#include "common/payments/provider_key_fingerprint.hpp"

namespace rr::api {
namespace {

// The control lane's threads: /readyz, answered from the readiness pinger's last result (only a
// process's first check waits for its first ping); two so that wait holds up no other check.
constexpr std::size_t kControlThreads = 2;

// What a second SIGTERM/SIGINT, during the drain or while in-flight requests finish, writes before
// exiting with status 1: the operator (or systemd's final signal) has decided not to wait.
constexpr std::string_view kSecondSignalLine = "level=warn msg=\"second signal: exiting now\"";

// Feeds systemd's watchdog only while the server answers its own /healthz (the acceptor and I/O
// threads work) and its worker pool makes progress (checked inside the process: the public
// /healthz is answered on the I/O thread so that it never waits behind work), so a wedged I/O
// loop or a stuck worker pool gets the process restarted.
class HealthWatchdog {
 public:
  HealthWatchdog(http::Server& server, std::string address, std::uint16_t port) {
    auto interval = daemon::watchdog_interval();
    if (!interval) return;
    if (address == "0.0.0.0" || address == "::") address = "127.0.0.1";
    if (address.find(':') != std::string::npos) address = "[" + address + "]";
    auto period = std::chrono::duration_cast<std::chrono::milliseconds>(*interval) / 3;
    thread_ = std::thread([this, &server, url = "http://" + address + ":" + std::to_string(port) + "/healthz", period] {
      while (!stopping_.load()) {
        try {
          bool answers = http::send({"GET", url, {}, "", period}).status == 200;
          if (answers && server.workers_responsive(period)) {
            daemon::notify_watchdog();
          } else if (answers) {
            log::warn("health check for the watchdog failed", {{"error", "the workers made no progress"}});
          }
        } catch (const http::TransportError& e) {
          log::warn("health check for the watchdog failed", {{"error", e.what()}});
        }
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, period, [this] { return stopping_.load(); });
      }
    });
  }
  ~HealthWatchdog() {
    stopping_ = true;
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

// "2", "0.5", "2.25": the drain as an operator wrote it in SHUTDOWN_DRAIN.
std::string seconds_text(std::chrono::milliseconds duration) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(duration.count()) / 1000.0);
  return buf;
}

}  // namespace

int run_server() {
  auto settings = ApiSettings::from_env(config::Environment::process());
  // The daemons' stop handling (common/daemon/stop_signal.hpp), without its SHUTDOWN_TIMEOUT alarm:
  // here SHUTDOWN_TIMEOUT bounds the wait for in-flight requests after the drain, below.
  daemon::install_stop_handlers(std::chrono::milliseconds{0}, kSecondSignalLine);
  daemon::block_stop_signals();
  // Before listening: an API whose PROVIDER_KEY_SECRET is not the deployment's must never charge.
  payments::check_provider_key_at_start(settings.database, settings.payment);

  App app(settings);
  http::ServerOptions options;
  options.address = settings.bind_address;
  options.port = settings.port;
  options.worker_threads = settings.worker_threads;
  options.io_threads = settings.io_threads;
  options.max_connections = settings.max_connections;
  options.max_queued_requests = settings.max_queued_requests;
  options.max_fibers = settings.max_fibers;
  options.trusted_proxies = settings.trusted_proxies;
  options.control_threads = kControlThreads;
  http::Server server(
      options, [&app](const http::Request& request) { return app.handle(request); },
      http::Triage([&app](http::Request& request) { return app.dispatch(request); }));
  server.start();
  log::info("listening", {{"address", settings.bind_address},
                          {"port", server.port()},
                          {"workers", settings.worker_threads},
                          {"io_threads", settings.io_threads},
                          {"pool_size", settings.database_pool_size},
                          {"max_connections", settings.max_connections},
                          {"max_in_flight_per_user", settings.max_in_flight_per_user},
                          {"max_queued_requests", settings.max_queued_requests},
                          {"fibers", settings.max_fibers}});
  // Before READY=1, so a busy METRICS_PORT stops the start rather than going unnoticed.
  daemon::MetricsEndpoint metrics(settings.metrics.address, settings.metrics.port,
                                  [&app] { return app.metrics_page().body; });
  daemon::notify_ready();
  HealthWatchdog watchdog(server, settings.bind_address, server.port());

  daemon::wait_for_stop();
  const int signo = daemon::stop_signal_number();
  if (settings.shutdown_drain.count() > 0) {
    // Not ready before systemd hears STOPPING=1: whoever learns of the stop from it (the unit, a
    // test) must find /readyz at 503 already.
    app.stop_being_ready();
    server.close_connections_after_each_answer();
  }
  daemon::notify_stopping();
  if (settings.shutdown_drain.count() > 0) {
    log::info("draining: /readyz answers 503 for " + seconds_text(settings.shutdown_drain) + " s",
              {{"signal", signo}, {"in_flight", server.in_flight()}});
    std::this_thread::sleep_for(settings.shutdown_drain);
  }
  server.stop_accepting();
  log::info("stopping: no new connections, finishing in-flight requests",
            {{"signal", signo}, {"in_flight", server.in_flight()}});
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
