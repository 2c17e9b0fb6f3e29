// Runs the project's real binaries from tests: one-shot commands and long-running daemons.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rr::test {

// build/bin/<name> of the build the tests belong to.
std::string binary(const std::string& name);
// A loopback TCP port nobody listens on right now.
std::uint16_t free_port();

// Environment changes for a child: a value sets the variable, std::nullopt removes it.
using EnvChanges = std::map<std::string, std::optional<std::string>>;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs to completion, capturing stdout and stderr.
CommandResult run_command(const std::vector<std::string>& argv, const EnvChanges& env = {});

// A daemon started in the background; its output goes to a file the test can read. Killed
// (SIGKILL) on destruction if still running, so no test leaves a process behind.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const EnvChanges& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int signo);
  // Waits for exit; returns the exit status (128+signal when killed) or nothing on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();
  std::string output() const;  // everything written to stdout and stderr so far
  // Polls until `needle` appears in the output or the timeout passes.
  bool wait_for_output(const std::string& needle, std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string output_path_;
};

// Polls a TCP port on 127.0.0.1 until it accepts a connection.
bool wait_for_port(std::uint16_t port, std::chrono::milliseconds timeout);

}  // namespace rr::test
