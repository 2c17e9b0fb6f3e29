// The command line every background daemon accepts: nothing (run until stopped) or `--once`
// (do all the work there is now, then exit; for cron, scripts and tests).
#pragma once

namespace rr::daemon {

struct DaemonArgs {
  bool once = false;
};

// Throws rr::cli::UsageError (exit status 2 under run_main) for anything else on the line.
DaemonArgs parse_daemon_args(int argc, const char* const* argv);

}  // namespace rr::daemon
