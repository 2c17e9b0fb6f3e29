// The guard every main runs inside: one clear line and a meaningful exit status for any error.
#pragma once

#include <functional>
#include <stdexcept>
#include <string_view>

namespace rr::cli {

// Initializes logging under `process_name`, runs `body`, and maps escaping exceptions to exit
// statuses: ConfigError and UsageError -> 2 with one line naming the problem, RefusedStart -> its
// own status with its line, anything else -> 1.
int run_main(std::string_view process_name, const std::function<int()>& body);

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace rr::cli
