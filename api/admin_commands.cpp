// Operator subcommands of rocket-rides-api; each opens one connection and exits.
#include "api/admin_commands.hpp"

#include <cstdio>
#include <map>

#include "common/auth/users.hpp"
#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/cli/run_main.hpp"
#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/db/migrations.hpp"

namespace rr::api {
namespace {

// Parses `--name value` and `--name=value` pairs; anything else is a usage error.
std::map<std::string, std::string> parse_flags(const std::vector<std::string>& args, std::size_t first,
                                               std::initializer_list<std::string> allowed) {
  std::map<std::string, std::string> flags;
  for (std::size_t i = first; i < args.size(); ++i) {
    std::string arg = args[i];
    if (!arg.starts_with("--")) throw cli::UsageError("unexpected argument \"" + arg + "\"");
    std::string name = arg.substr(2);
    std::string value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= args.size()) throw cli::UsageError("--" + name + " needs a value");
      value = args[++i];
    }
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      throw cli::UsageError("unknown flag --" + name);
    }
    flags[name] = value;
  }
  for (const auto& name : allowed) {
    if (!flags.count(name)) throw cli::UsageError("--" + name + " is required");
  }
  return flags;
}

}  // namespace

int run_migrate() {
  auto settings = config::DatabaseSettings::from_env(config::Environment::process());
  pqxx::connection conn(settings.url);
  auto report = db::migrate(conn, db::embedded_migrations(), settings.session.statement_timeout);
  log::info("migrations complete", {{"applied", report.applied.size()}, {"already_applied", report.already_applied}});
  return cli::kExitOk;
}

int run_user_command(const std::vector<std::string>& args) {
  // args[0] is "user".
  if (args.size() < 2) throw cli::UsageError("usage: user create --email E --stripe-customer C | user token --email E");
  auto settings = config::DatabaseSettings::from_env(config::Environment::process());
  const std::string& verb = args[1];
  try {
    if (verb == "create") {
      auto flags = parse_flags(args, 2, {"email", "stripe-customer"});
      pqxx::connection conn(settings.url);
      auto created =
          auth::create_user(conn, flags["email"], flags["stripe-customer"], settings.session.statement_timeout);
      log::info("user created", {{"user_id", created.user.id}});
      std::printf("%s\n", created.token.c_str());
      return cli::kExitOk;
    }
    if (verb == "token") {
      auto flags = parse_flags(args, 2, {"email"});
      pqxx::connection conn(settings.url);
      std::string token = auth::issue_token(conn, flags["email"], settings.session.statement_timeout);
      log::info("token issued");
      std::printf("%s\n", token.c_str());
      return cli::kExitOk;
    }
  } catch (const auth::UserExists& e) {
    log::error("user not created", {{"problem", e.what()}, {"hint", "use `user token --email E` for a new token"}});
    return cli::kExitFailure;
  } catch (const auth::UserNotFound& e) {
    log::error("no such user", {{"problem", e.what()}});
    return cli::kExitFailure;
  } catch (const auth::InvalidUserInput& e) {
    throw cli::UsageError(e.what());
  }
  throw cli::UsageError("unknown user subcommand \"" + verb + "\" (expected create or token)");
}

}  // namespace rr::api
