// rocket-rides-stripe-mock: a local stand-in for Stripe's charges and refunds API, for development,
// the demo and tests. Configuration in tools/stripe_mock/config.hpp; endpoints in
// tools/stripe_mock/.
#include <csignal>

#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/cli/program_info.hpp"
#include "common/cli/run_main.hpp"
#include "common/http/server.hpp"
#include "tools/stripe_mock/config.hpp"
#include "tools/stripe_mock/mock.hpp"

namespace {

constexpr rr::cli::ProgramInfo kProgram{
    "rocket-rides-stripe-mock", "a local stand-in for the payment provider, for development and tests",
    R"(Usage: rocket-rides-stripe-mock

Serves Stripe's charges and refunds API (its wire format, idempotency keys, declines, refunds)
on BIND_ADDRESS:PORT, with fault injection (MOCK_FAILURE_RATE, MOCK_LATENCY_MS, MOCK_DROP_RATE),
until SIGINT or SIGTERM. Not for production: it charges nobody.
)",
    "",
    R"(  PORT, BIND_ADDRESS, STRIPE_API_KEY (unset: any bearer token), MOCK_FAILURE_RATE,
  MOCK_LATENCY_MS, MOCK_DROP_RATE, MOCK_MAX_IDEMPOTENCY_KEYS, MOCK_SEED.
)"};

}  // namespace

int main(int argc, char** argv) {
  if (auto answered = rr::cli::answer_version_or_help(argc, argv, kProgram)) return *answered;
  return rr::cli::run_main(kProgram.name, [] {
    auto config = rr::stripe_mock::MockConfig::from_env(rr::config::Environment::process());

    // Blocked before any thread starts, so every thread inherits the mask and sigwait sees them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    rr::stripe_mock::Mock mock(config.api_key, config.faults, config.seed,
                               static_cast<std::size_t>(config.max_idempotency_keys));
    rr::http::ServerOptions options;
    options.address = config.bind_address;
    options.port = config.port;
    // Every request runs as a fiber on the I/O thread: the handler holds its lock only briefly and
    // its one wait, the injected latency, is a fiber sleep. No hand-off to a worker and back, which
    // was most of what a charge cost the stand-in (and, in bench/api_bench.sh, the machine the API
    // shares with it). Beyond the fibers, the workers, where the latency parks a thread.
    options.max_fibers = 4096;
    options.worker_threads = 64;
    options.drop_marked_answers = true;  // the drops Mock injects (http::kDropConnectionHeader)
    rr::http::Server server(
        options, [&mock](const rr::http::Request& request) { return mock.handle(request); },
        [](rr::http::Request&) {
          return rr::http::Dispatch{std::nullopt, rr::http::Lane::fibers};
        });
    server.start();
    rr::log::info("listening", {{"address", config.bind_address},
                                {"port", server.port()},
                                {"auth", config.api_key.empty() ? "any bearer token" : "STRIPE_API_KEY"},
                                {"failure_rate", config.faults.failure_rate},
                                {"latency", config.faults.latency},
                                {"drop_rate", config.faults.drop_rate},
                                {"max_idempotency_keys", config.max_idempotency_keys},
                                {"seed", config.seed}});

    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    rr::log::info("stopping", {{"signal", signal_number}});
    server.stop_accepting();
    server.wait_idle(std::chrono::seconds(10));
    server.stop();
    return rr::cli::kExitOk;
  });
}
