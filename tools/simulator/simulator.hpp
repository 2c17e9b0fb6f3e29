// Demo traffic: a steady stream of rides with fresh keys from well-behaved clients, some of whom
// give up early (abandoned requests for the completer to finish).
#pragma once

#include <cstdint>
#include <string>

#include "common/config/environment.hpp"
#include "tools/simulator/ride_client.hpp"

namespace rr::client {

struct SimulatorSettings {
  RideClientOptions client;  // SIMULATOR_API_URL, SIMULATOR_TOKEN
  double rides_per_second;   // SIMULATOR_RATE, default 1
  double abandon_rate;       // SIMULATOR_ABANDON_RATE, default 0.1: give up after the first failure
  std::size_t concurrency;   // SIMULATOR_CONCURRENCY, default 4 clients
  std::int64_t max_rides;    // SIMULATOR_MAX_RIDES, 0 = forever
  static SimulatorSettings from_env(const config::Environment& env);
};

struct SimulatorReport {
  std::uint64_t created = 0, declined = 0, abandoned = 0, other = 0, retries = 0;
};

// Runs until a stop is requested (daemon/stop_signal.hpp) or max_rides were sent.
SimulatorReport run_simulator(const SimulatorSettings& settings);

}  // namespace rr::client
