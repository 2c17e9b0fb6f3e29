// rocket-rides-api: the HTTP API, plus the operator subcommands `migrate`, `user`, `keys`, `archive`,
// `reconcile` and `rotate-provider-key`.
#include <string>
#include <vector>

#include "api/admin_commands.hpp"
#include "api/serve.hpp"
#include "common/base/log.hpp"
#include "common/cli/run_main.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return rr::cli::run_main("rocket-rides-api", [&]() -> int {
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
