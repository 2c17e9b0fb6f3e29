// `archive list [--since WHEN] [--limit N]`: the keys the reaper deleted before they finished,
// which someone must settle by hand. Exit statuses: common/cli/exit_codes.hpp.
#include <cstdio>
#include <regex>

#include "api/admin_commands.hpp"
#include "api/command_flags.hpp"
#include "api/command_output.hpp"
#include "common/auth/tokens.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/cli/run_main.hpp"
#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/maintenance/archive_listing.hpp"

namespace rr::api {
namespace {

constexpr const char* kArchiveUsage = "usage: archive list [--since TIMESTAMP|DURATION] [--limit N] [--json]";
constexpr std::int64_t kDefaultArchiveListLimit = 100;
constexpr std::int64_t kMaxArchiveListLimit = 10000;

// --since is either a time ("2026-11-22", "2026-11-22T17:00:00Z", "2026-11-22 17:00+01:00"; UTC
// when no zone is given) or how far back from now ("90s", "30m", "24h", "7d").
maintenance::ArchiveSince parse_since(const std::string& text) {
  static const std::regex duration(R"(^([0-9]{1,9})([smhd])$)");
  static const std::regex timestamp(
      R"(^([0-9]{4}-[0-9]{2}-[0-9]{2})([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$)");
  std::smatch match;
  maintenance::ArchiveSince since;
  if (std::regex_match(text, match, duration)) {
    const std::int64_t unit = match[2] == "s" ? 1 : match[2] == "m" ? 60 : match[2] == "h" ? 3600 : 86400;
    since.ago = std::chrono::seconds(std::stoll(match[1]) * unit);
    return since;
  }
  if (std::regex_match(text, match, timestamp)) {
    std::string normalized = match[1].str() + (match[2].matched ? match[2].str() : "T00:00:00");
    normalized += match[5].matched ? match[5].str() : "Z";
    since.timestamp = normalized;
    return since;
  }
  throw cli::UsageError(
      "archive list: --since takes a time (2026-11-22, 2026-11-22T17:00:00Z; UTC unless a zone "
      "is given) or a duration back from now (90s, 30m, 24h, 7d), not \"" +
      text + "\"");
}

void write_archived_json(JsonOutput& out, const maintenance::ArchivedKey& key) {
  out.field("id", key.id)
      .field("archived_at", key.archived_at)
      .field("created_at", key.created_at)
      .field("last_run_at", key.last_run_at)
      .field("locked_at", key.locked_at)
      .field("user_id", key.user_id)
      .field("email", key.email)
      .field("idempotency_key", key.idempotency_key)
      .field("key_tag", auth::log_tag(key.idempotency_key))
      .field("request_method", key.request_method)
      .field("request_path", key.request_path)
      .field("recovery_point", key.recovery_point)
      .field("payment_idempotency_key", key.payment_idempotency_key)
      .field("attempts", key.attempts)
      .field("last_error", key.last_error);
}

int archive_list(const std::vector<std::string>& args) {
  auto flags = Flags::parse(args, 2, {{}, {"since", "limit"}, {"json"}}, "archive list");
  maintenance::ArchiveSince since;
  if (auto text = flags.find("since")) since = parse_since(*text);
  const auto limit = flags.integer("limit", kDefaultArchiveListLimit, 1, kMaxArchiveListLimit);
  auto settings = config::DatabaseSettings::from_env(config::Environment::process());
  db::PooledConnection conn(settings.url, settings.session);
  maintenance::ArchivedKeys listing;
  try {
    listing = maintenance::list_archived_keys(conn, since, limit);
  } catch (const maintenance::InvalidSince&) {
    throw cli::UsageError("archive list: --since \"" + flags.value("since") + "\" is not a valid time");
  }

  if (flags.has("json")) {
    JsonOutput out;
    out.begin_object().field("since", flags.find("since")).field("limit", limit).field("total", listing.total);
    out.begin_array("keys");
    for (const auto& key : listing.keys) {
      out.begin_object();
      write_archived_json(out, key);
      out.end_object();
    }
    out.end_array().end_object().print();
    return cli::kExitOk;
  }

  const std::string what =
      "keys archived unfinished" + (flags.find("since") ? " since " + printable(*flags.find("since")) : "");
  if (listing.keys.empty()) {
    std::printf("no %s\n", what.c_str());
    return cli::kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& key : listing.keys) {
    rows.push_back({std::to_string(key.id), key.archived_at, printable(key.email), printable(key.recovery_point),
                    std::to_string(key.attempts), key.payment_idempotency_key, auth::log_tag(key.idempotency_key),
                    key.last_error ? printable(*key.last_error, 60) : "-"});
  }
  print_table({"ID", "ARCHIVED_AT", "USER", "RECOVERY_POINT", "ATTEMPTS", "PAYMENT_KEY", "KEY_TAG", "LAST_ERROR"},
              rows);
  std::printf(
      "%zu of %lld %s, oldest first%s\n", listing.keys.size(), static_cast<long long>(listing.total), what.c_str(),
      listing.total > static_cast<std::int64_t>(listing.keys.size()) ? " (raise --limit or narrow --since)" : "");
  return cli::kExitOk;
}

}  // namespace

int run_archive_command(const std::vector<std::string>& args) {
  // args[0] is "archive".
  if (args.size() < 2) throw cli::UsageError(kArchiveUsage);
  if (args[1] == "list") return archive_list(args);
  throw cli::UsageError("unknown archive subcommand \"" + args[1] + "\" (expected list)");
}

}  // namespace rr::api
