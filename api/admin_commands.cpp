// Operator subcommands `migrate` and `user` of rocket-rides-api; each opens one connection and exits.
#include "api/admin_commands.hpp"

#include <cstdio>

#include "api/command_flags.hpp"
#include "api/command_output.hpp"
#include "common/auth/token_revocation.hpp"
#include "common/auth/tokens.hpp"
#include "common/auth/users.hpp"
#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/cli/run_main.hpp"
#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/db/migrations.hpp"

namespace rr::api {
namespace {

constexpr const char* kAdminUsage =
    "usage: user create --email E --stripe-customer C | user token --email E [--list | --revoke TOKEN_PREFIX] "
    "[--json]";

void write_token_json(JsonOutput& out, const auth::TokenInfo& token) {
  out.begin_object()
      .field("prefix", token.prefix.empty() ? std::optional<std::string>() : token.prefix)
      .field("tag", token.tag)
      .field("created_at", token.created_at)
      .end_object();
}

std::vector<std::string> token_row(const auth::TokenInfo& token) {
  return {token.prefix.empty() ? "(none: older than prefixes)" : token.prefix, token.tag, token.created_at};
}

int list_tokens(const config::DatabaseSettings& settings, const Flags& flags) {
  db::PooledConnection conn(settings.url, settings.session);
  auto tokens = auth::list_tokens(conn, flags.value("email"));
  if (flags.has("json")) {
    JsonOutput out;
    out.begin_object().field("email", flags.value("email")).begin_array("tokens");
    for (const auto& token : tokens) write_token_json(out, token);
    out.end_array().end_object().print();
    return cli::kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& token : tokens) rows.push_back(token_row(token));
  print_table({"PREFIX", "TAG", "CREATED_AT"}, rows);
  return cli::kExitOk;
}

int revoke_token(const config::DatabaseSettings& settings, const Flags& flags) {
  db::PooledConnection conn(settings.url, settings.session);
  auto revocation = auth::revoke_token(conn, flags.value("email"), flags.value("revoke"));
  using Result = auth::Revocation::Result;
  const char* result = "revoked";
  int status = cli::kExitOk;
  std::string message;
  switch (revocation.result) {
    case Result::revoked:
      message = "revoked token " +
                (revocation.matches[0].prefix.empty() ? "with tag " + revocation.matches[0].tag
                                                      : revocation.matches[0].prefix + "...") +
                " (created " + revocation.matches[0].created_at + "); APIs stop accepting it within TOKEN_CACHE_TTL; " +
                std::to_string(revocation.remaining) + " token(s) left for this user";
      log::warn("api token revoked", {{"tag", revocation.matches[0].tag}});
      break;
    case Result::not_found:
      result = "not_found";
      status = cli::kExitNotFound;
      message = "no token of this user matches: nothing revoked (user token --email E --list shows them)";
      break;
    case Result::ambiguous:
      result = "ambiguous";
      status = cli::kExitRefused;
      message = std::to_string(revocation.matches.size()) +
                " tokens of this user match: nothing revoked; give more characters (up to rr_ and 8 hex digits) or "
                "the whole token";
      break;
  }
  if (flags.has("json")) {
    JsonOutput out;
    out.begin_object().field("result", result).field("message", message).begin_array("matches");
    for (const auto& token : revocation.matches) write_token_json(out, token);
    out.end_array().field("remaining", revocation.remaining).end_object().print();
  } else {
    std::printf("%s\n", message.c_str());
    if (revocation.result == Result::ambiguous) {
      std::vector<std::vector<std::string>> rows;
      for (const auto& token : revocation.matches) rows.push_back(token_row(token));
      print_table({"PREFIX", "TAG", "CREATED_AT"}, rows);
    }
  }
  return status;
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
  if (args.size() < 2) throw cli::UsageError(kAdminUsage);
  const std::string& verb = args[1];
  try {
    if (verb == "create") {
      auto flags = Flags::parse(args, 2, {{"email", "stripe-customer"}, {}, {}}, "user create");
      auto settings = config::DatabaseSettings::from_env(config::Environment::process());
      pqxx::connection conn(settings.url);
      auto created = auth::create_user(conn, flags.value("email"), flags.value("stripe-customer"),
                                       settings.session.statement_timeout);
      log::info("user created", {{"user_id", created.user.id}});
      std::printf("%s\n", created.token.c_str());
      return cli::kExitOk;
    }
    if (verb == "token") {
      auto flags = Flags::parse(args, 2, {{"email"}, {"revoke"}, {"list", "json"}}, "user token");
      if (flags.has("list") && flags.has("revoke"))
        throw cli::UsageError("user token: --list and --revoke exclude each other");
      auto settings = config::DatabaseSettings::from_env(config::Environment::process());
      if (flags.has("list")) return list_tokens(settings, flags);
      if (flags.has("revoke")) return revoke_token(settings, flags);
      if (flags.has("json")) throw cli::UsageError("user token: --json goes with --list or --revoke");
      pqxx::connection conn(settings.url);
      std::string token = auth::issue_token(conn, flags.value("email"), settings.session.statement_timeout);
      log::info("token issued", {{"prefix", auth::token_prefix(token)}});
      std::printf("%s\n", token.c_str());
      return cli::kExitOk;
    }
  } catch (const auth::UserExists& e) {
    log::error("user not created", {{"problem", e.what()}, {"hint", "use `user token --email E` for a new token"}});
    return cli::kExitFailure;
  } catch (const auth::UserNotFound& e) {
    log::error("no such user", {{"problem", e.what()}});
    return cli::kExitNotFound;
  } catch (const auth::InvalidUserInput& e) {
    throw cli::UsageError(verb == "token" ? std::string("user token: ") + e.what() : e.what());
  }
  throw cli::UsageError("unknown user subcommand \"" + verb + "\" (expected create or token)");
}

}  // namespace rr::api
