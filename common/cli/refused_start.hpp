// A start-up self-check that failed: the process must not run as configured, and says why in one
// line (what differs, since when, what to run) with an exit status of its own, so that neither an
// operator nor a supervisor mistakes it for a crash worth restarting into.
#pragma once

#include <stdexcept>
#include <string>

namespace rr::cli {

class RefusedStart : public std::runtime_error {
 public:
  RefusedStart(int exit_status, const std::string& line) : std::runtime_error(line), exit_status_(exit_status) {}
  int exit_status() const { return exit_status_; }

 private:
  int exit_status_;
};

}  // namespace rr::cli
