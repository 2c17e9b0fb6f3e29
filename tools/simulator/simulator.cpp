// The simulator's clients: each sends a ride with a fresh key and retries it like a mobile app.
#include "tools/simulator/simulator.hpp"

#include <atomic>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/base/log.hpp"
#include "common/base/random.hpp"
#include "common/daemon/stop_signal.hpp"

namespace rr::client {

SimulatorSettings SimulatorSettings::from_env(const config::Environment& env) {
  SimulatorSettings s;
  s.client.api_url = env.url("SIMULATOR_API_URL", "http://127.0.0.1:5000", {"http://", "https://"});
  s.client.token = env.required_string("SIMULATOR_TOKEN");
  s.rides_per_second = env.decimal("SIMULATOR_RATE", 1, 0.01, 10000);
  s.abandon_rate = env.decimal("SIMULATOR_ABANDON_RATE", 0.1, 0, 1);
  s.concurrency = static_cast<std::size_t>(env.integer("SIMULATOR_CONCURRENCY", 4, 1, 1024));
  s.max_rides = env.integer("SIMULATOR_MAX_RIDES", 0, 0, 1'000'000'000);
  return s;
}

SimulatorReport run_simulator(const SimulatorSettings& settings) {
  std::atomic<std::int64_t> sent{0};
  std::mutex report_mutex;
  SimulatorReport report;
  auto interval = std::chrono::microseconds(
      static_cast<long long>(1e6 * static_cast<double>(settings.concurrency) / settings.rides_per_second));

  auto client_loop = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> lat(37.6, 37.9), lon(-122.5, -122.2), unit(0, 1);
    while (!daemon::stop_requested()) {
      if (settings.max_rides > 0 && sent.fetch_add(1) >= settings.max_rides) break;
      RideClientOptions options = settings.client;
      bool impatient = unit(rng) < settings.abandon_rate;
      if (impatient) options.retry.max_attempts = 1;
      auto result = create_ride(options, random_uuid(), {lat(rng), lon(rng), lat(rng), lon(rng)},
                                [](std::chrono::milliseconds d) { return daemon::sleep_unless_stopped(d); });
      {
        std::lock_guard lock(report_mutex);
        report.retries += static_cast<std::uint64_t>(result.attempts - 1);
        if (result.final && result.status == 201) {
          ++report.created;
        } else if (result.final && result.status == 402) {
          ++report.declined;
        } else if (!result.final) {
          ++report.abandoned;
        } else {
          ++report.other;
        }
      }
      log::info(result.final ? "ride answered" : "ride abandoned",
                {{"status", result.status}, {"attempts", result.attempts}, {"replayed", result.replayed}});
      if (!daemon::sleep_unless_stopped(std::chrono::duration_cast<std::chrono::milliseconds>(interval))) break;
    }
  };

  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < settings.concurrency; ++i) {
    clients.emplace_back(client_loop, static_cast<unsigned>(std::random_device{}() + i));
  }
  for (auto& t : clients) t.join();
  return report;
}

}  // namespace rr::client
