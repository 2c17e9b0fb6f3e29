// Operating the suite: systemd units verify, the install tree is complete, the Procfile names
// every process.
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <sstream>

#include "support/process.hpp"
#include "support/text.hpp"

using rr::test::read_file;
using rr::test::run_command;

namespace {
const std::string kUnitDir = std::string(ROCKET_RIDES_BIN_DIR) + "/../systemd/test/";
}  // namespace

BOOST_AUTO_TEST_SUITE(operations)

BOOST_AUTO_TEST_CASE(every_systemd_unit_passes_systemd_analyze_verify) {
  for (const char* unit :
       {"rocket-rides-api.service", "rocket-rides-enqueuer.service", "rocket-rides-completer.service",
        "rocket-rides-reaper.service", "rocket-rides.target", "rocket-rides-backup.service",
        "rocket-rides-backup.timer", "rocket-rides-backup-metrics.service", "rocket-rides-backup-metrics.timer"}) {
    auto result = run_command({"/usr/bin/systemd-analyze", "verify", kUnitDir + unit});
    BOOST_TEST(result.exit_code == 0, unit << ": " << result.out << result.err);
  }
}

BOOST_AUTO_TEST_CASE(units_score_well_in_systemd_analyze_security) {
  for (const char* name : {"api", "enqueuer", "completer", "reaper"}) {
    // --threshold fails the command when the exposure (0-100 internally, 0.0-10.0 printed) is higher.
    auto result = run_command({"/usr/bin/systemd-analyze", "security", "--offline=true", "--threshold=20",
                               kUnitDir + "rocket-rides-" + name + ".service"});
    BOOST_TEST(result.exit_code == 0, name << ": " << result.out.substr(result.out.rfind("Overall")));
  }
}

BOOST_AUTO_TEST_CASE(units_are_hardened_notify_services_under_the_target) {
  for (const char* name : {"api", "enqueuer", "completer", "reaper"}) {
    auto unit = read_file(kUnitDir + "rocket-rides-" + name + ".service");
    for (const char* line : {"Type=notify", "WatchdogSec=", "Restart=on-failure", "DynamicUser=yes",
                             "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "NoNewPrivileges=yes",
                             "CapabilityBoundingSet=\n", "RestrictAddressFamilies=",
                             "EnvironmentFile=/etc/rocket-rides/rocket-rides.env", "PartOf=rocket-rides.target"}) {
      BOOST_TEST(unit.find(line) != std::string::npos, name << " lacks " << line);
    }
  }
  auto target = read_file(kUnitDir + "rocket-rides.target");
  BOOST_TEST(target.find("rocket-rides-api.service") != std::string::npos);
  BOOST_TEST(target.find("rocket-rides-reaper.service") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(procfile_runs_every_process_from_build_bin) {
  auto procfile = read_file(std::string(ROCKET_RIDES_SOURCE_DIR) + "/Procfile");
  for (const char* entry : {"api:", "enqueuer:", "completer:", "reaper:", "stripe-mock:", "simulator:"}) {
    auto at = procfile.starts_with(entry) ? 0 : procfile.find(std::string("\n") + entry);
    BOOST_TEST(at != std::string::npos, "Procfile lacks " << entry);
    if (at == std::string::npos) continue;
    // foreman signals only the shell it started: the daemon must replace it to get SIGTERM.
    auto line = procfile.substr(at, procfile.find('\n', at + 1) - at);
    BOOST_TEST(line.find(": exec ") != std::string::npos, "Procfile line does not exec: " << line);
  }
}

BOOST_AUTO_TEST_CASE(env_example_documents_every_variable_the_code_reads) {
  auto example = read_file(std::string(ROCKET_RIDES_SOURCE_DIR) + "/.env.example");
  for (const char* variable :
       {"DATABASE_URL", "REDIS_URL", "PORT", "STRIPE_API_BASE", "STRIPE_API_KEY", "STRIPE_TIMEOUT",
        "PROVIDER_KEY_SECRET", "IDEMPOTENCY_KEY_LOCK_TIMEOUT", "COMPLETER_MIN_AGE", "COMPLETER_LAST_RUN_THRESHOLD",
        "REAPER_MAX_AGE", "ENQUEUER_BATCH_SIZE", "COMPLETER_BATCH_SIZE", "REAPER_BATCH_SIZE", "SHUTDOWN_TIMEOUT",
        "SHUTDOWN_DRAIN", "METRICS_PORT", "DATABASE_PREPARED_STATEMENTS", "LISTEN_DATABASE_URL"}) {
    BOOST_TEST(example.find(variable) != std::string::npos, variable);
  }
  // The API's limits against hostile clients.
  for (const char* variable :
       {"API_MAX_CONNECTIONS", "API_MAX_IN_FLIGHT_PER_USER", "API_MAX_QUEUED_REQUESTS", "IDEMPOTENCY_MAX_WAIT"}) {
    BOOST_TEST(example.find(variable) != std::string::npos, variable);
  }
  // The rider pages' sessions.
  for (const char* variable : {"SESSION_TTL", "SESSION_COOKIE_SECURE"}) {
    BOOST_TEST(example.find(variable) != std::string::npos, variable);
  }
}

BOOST_AUTO_TEST_SUITE_END()
