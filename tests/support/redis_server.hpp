// A redis-server of a test's own on a free loopback port, for tests that stop and start Redis or
// need a queue no other suite touches. Stopped on destruction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace rr::test {

class RedisServer {
 public:
  explicit RedisServer(std::vector<std::string> extra_args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts again on the same port (an empty Redis: nothing is saved, and the RDB file a replica
  // wrote during a sync is removed first).
  void start();
  void stop();
  // kill -9: no shutdown, nothing flushed to replicas that had not copied it yet.
  void kill();
  std::uint16_t port() const { return port_; }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_) + "/0"; }
  // Runs redis-cli against it and returns its standard output.
  std::string cli(const std::vector<std::string>& args) const;

 private:
  std::uint16_t port_;
  std::vector<std::string> extra_args_;
  // Its own working directory: a replica writes the RDB of a full sync there (dump.rdb), which
  // another server started in a shared directory would load.
  std::string directory_;
  std::optional<ChildProcess> process_;
};

}  // namespace rr::test
