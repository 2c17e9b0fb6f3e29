// `rotate-provider-key [--dry-run]`: records the fingerprint of the PROVIDER_KEY_SECRET in this
// process's environment as the deployment's, the explicit step after which processes with the new
// secret start and those with the old one refuse (common/payments/provider_key_fingerprint.hpp).
#include <cstdio>

#include "api/admin_commands.hpp"
#include "api/command_flags.hpp"
#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/db/connection.hpp"
#include "common/payments/provider_key_fingerprint.hpp"

namespace rr::api {

int run_rotate_provider_key_command(const std::vector<std::string>& args) {
  // args[0] is "rotate-provider-key".
  auto flags = Flags::parse(args, 1, {{}, {}, {"dry-run"}}, "rotate-provider-key");
  const bool dry_run = flags.has("dry-run");
  auto env = config::Environment::process();
  auto database = config::DatabaseSettings::from_env(env);
  auto payment = config::PaymentSettings::from_env(env);
  db::Connection conn(database.url);
  auto rotation = payments::rotate_provider_key_fingerprint(conn, payment.provider_key_secret, dry_run,
                                                            database.session.statement_timeout);
  const std::string was = rotation.previous
                              ? rotation.previous->fingerprint.substr(0, 12) + " (recorded at " +
                                    rotation.previous->recorded_at + ", " + rotation.previous->recorded_by + ")"
                              : "none";
  const std::string now = rotation.fingerprint.substr(0, 12);
  if (!rotation.changed) {
    std::printf("%sfingerprint=%s already recorded; nothing to do\n", dry_run ? "dry-run: " : "", now.c_str());
    return cli::kExitNothingToDo;
  }
  if (dry_run) {
    std::printf("dry-run: would record fingerprint=%s was=%s\n", now.c_str(), was.c_str());
    return cli::kExitOk;
  }
  log::warn("provider key secret rotated: processes with the previous secret now refuse to start",
            {{"fingerprint", now}, {"was", was}});
  std::printf("recorded fingerprint=%s was=%s\n", now.c_str(), was.c_str());
  return cli::kExitOk;
}

}  // namespace rr::api
