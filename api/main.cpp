// rocket-rides-api: the HTTP API, plus the operator subcommands `migrate`, `user`, `keys`, `archive`,
// `reconcile` and `rotate-provider-key`.
#include <string>
#include <vector>

#include "api/admin_commands.hpp"
#include "api/serve.hpp"
#include "common/base/log.hpp"
#include "common/cli/program_info.hpp"
#include "common/cli/run_main.hpp"

namespace {

constexpr rr::cli::ProgramInfo kProgram{"rocket-rides-api", "the Rocket Rides HTTP API and its operator commands",
                                        R"(Usage: rocket-rides-api
  or:  rocket-rides-api migrate
  or:  rocket-rides-api user create --email E --stripe-customer C
  or:  rocket-rides-api user token --email E [--list | --revoke TOKEN_PREFIX] [--json]
  or:  rocket-rides-api keys show (--email E --key K | --id N) [--body] [--json]
  or:  rocket-rides-api keys list --unfinished [--older-than SECONDS] [--limit N] [--json]
  or:  rocket-rides-api keys unlock --id N [--force] [--json]
  or:  rocket-rides-api archive list [--since TIMESTAMP|DURATION] [--limit N] [--json]
  or:  rocket-rides-api reconcile --since TIME [--until TIME] [--dry-run]
  or:  rocket-rides-api rotate-provider-key [--dry-run]

Without arguments, serves the HTTP API on BIND_ADDRESS:PORT until SIGTERM, which drains for
SHUTDOWN_DRAIN seconds and then finishes in-flight requests within SHUTDOWN_TIMEOUT.
migrate applies the database schema compiled into the binary; the other subcommands are the
operator commands (users and tokens, idempotency keys, the archive, reconciliation against the
payment provider, recording a rotated PROVIDER_KEY_SECRET).
)",
                                        "", rr::cli::kSettingsFromEnvironment};

}  // namespace

int main(int argc, char** argv) {
  if (auto answered = rr::cli::answer_version_or_help(argc, argv, kProgram)) return *answered;
  std::vector<std::string> args(argv + 1, argv + argc);
  return rr::cli::run_main(kProgram.name, [&]() -> int {
    if (args.empty()) return rr::api::run_server();
    // Subcommands print their result on stdout, so their log lines go to stderr.
    rr::log::use_stderr();
    if (args[0] == "migrate") return rr::api::run_migrate();
    if (args[0] == "user") return rr::api::run_user_command(args);
    if (args[0] == "keys") return rr::api::run_keys_command(args);
    if (args[0] == "archive") return rr::api::run_archive_command(args);
    if (args[0] == "reconcile") return rr::api::run_reconcile_command(args);
    if (args[0] == "rotate-provider-key") return rr::api::run_rotate_provider_key_command(args);
    throw rr::cli::UsageError(
        "unknown subcommand \"" + args[0] +
        "\" (expected no argument to serve, migrate, user, keys, archive, reconcile or rotate-provider-key)");
  });
}
