// Parsing of the daemons' command line.
#include "common/daemon/daemon_args.hpp"

#include <string>
#include <string_view>

#include "common/cli/run_main.hpp"

namespace rr::daemon {

DaemonArgs parse_daemon_args(int argc, const char* const* argv) {
  DaemonArgs args;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i] ? argv[i] : "";
    if (arg == "--once") {
      args.once = true;
    } else {
      throw cli::UsageError("unknown argument '" + std::string(arg) + "' (the only option is --once)");
    }
  }
  return args;
}

}  // namespace rr::daemon
