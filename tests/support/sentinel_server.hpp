// One redis-sentinel process of a test's own, watching one master on loopback, with timings low
// enough that a failover takes a few seconds. Stopped on destruction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace rr::test {

struct SentinelTimings {
  int down_after_ms = 1000;        // sentinel down-after-milliseconds
  int failover_timeout_ms = 3000;  // sentinel failover-timeout
};

class SentinelServer {
 public:
  SentinelServer(std::string master_name, std::uint16_t master_port, int quorum, SentinelTimings timings = {});
  ~SentinelServer();
  SentinelServer(const SentinelServer&) = delete;
  SentinelServer& operator=(const SentinelServer&) = delete;

  // Starts again on the same port with the configuration it rewrote (what it learnt survives).
  void start();
  void stop();
  bool running() const { return process_.has_value(); }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string cli(const std::vector<std::string>& args) const;
  // The port this sentinel names for the master, or 0 if it cannot say.
  std::uint16_t master_port() const;

 private:
  std::string master_name_;
  std::uint16_t port_;
  std::string directory_;
  std::optional<ChildProcess> process_;
};

}  // namespace rr::test
