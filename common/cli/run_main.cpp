// Top-level error boundary for the binaries.
#include "common/cli/run_main.hpp"

#include <pqxx/pqxx>

#include <csignal>
#include <stdexcept>

#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/cli/refused_start.hpp"
#include "common/config/environment.hpp"

namespace rr::cli {

int run_main(std::string_view process_name, const std::function<int()>& body) {
  // A reader of standard output that goes away (a log shipper restarted, `| head`) must cost the
  // log lines, not the process: a payment in progress is worth more than its log. With SIGPIPE
  // ignored a write to a closed pipe fails with EPIPE, which the log's writer drops and counts.
  std::signal(SIGPIPE, SIG_IGN);
  log::init(process_name);
  try {
    return body();
  } catch (const config::ConfigError& e) {
    log::error("invalid configuration", {{"variable", e.variable()}, {"problem", e.problem()}});
    return kExitConfig;
  } catch (const RefusedStart& e) {
    log::error(e.what());
    return e.exit_status();
  } catch (const UsageError& e) {
    log::error("usage error", {{"problem", e.what()}});
    return kExitConfig;
  } catch (const pqxx::broken_connection& e) {
    log::error("cannot reach the database", {{"error", e.what()}});
    return kExitFailure;
  } catch (const std::exception& e) {
    log::error("fatal error", {{"error", e.what()}});
    return kExitFailure;
  }
}

}  // namespace rr::cli
