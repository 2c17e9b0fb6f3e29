// `keys show`, `keys list --unfinished` and `keys unlock`: what an operator runs when keys are
// stuck (docs/operations.md, "When an alert fires"). Exit statuses: common/cli/exit_codes.hpp.
#include <cstdio>
#include <limits>

#include "api/admin_commands.hpp"
#include "api/command_flags.hpp"
#include "api/command_output.hpp"
#include "api/key_rides.hpp"
#include "common/auth/tokens.hpp"
#include "common/base/log.hpp"
#include "common/cli/exit_codes.hpp"
#include "common/cli/run_main.hpp"
#include "common/config/environment.hpp"
#include "common/config/settings.hpp"
#include "common/db/sql_seconds.hpp"
#include "common/idempotency/key_inspection.hpp"
#include "common/idempotency/manual_unlock.hpp"

namespace rr::api {
namespace {

using idempotency::KeyDetails;
using idempotency::LockState;

constexpr const char* kKeysUsage =
    "usage: keys show (--email E --key K | --id N) [--body] [--json] | "
    "keys list --unfinished [--older-than SECONDS] [--limit N] [--json] | keys unlock --id N [--force] [--json]";
constexpr std::int64_t kDefaultKeyListLimit = 100;
constexpr std::int64_t kMaxKeyListLimit = 10000;
constexpr double kMaxAgeSeconds = 10.0 * 366 * 86400;

struct Context {
  config::DatabaseSettings database;
  std::chrono::milliseconds lock_timeout;
};

Context context_from_env() {
  auto env = config::Environment::process();
  return {config::DatabaseSettings::from_env(env), config::WorkflowSettings::from_env(env).lock_timeout};
}

std::int64_t key_id_flag(const Flags& flags) {
  return flags.integer("id", 0, 1, std::numeric_limits<std::int64_t>::max());
}

// When the lock was taken and when it expires (or expired), for people.
std::string lock_phrase(const KeyDetails& key) {
  const double expires_in = key.lock_expires_in_seconds.value_or(0);
  const std::string taken = "taken " + key.locked_at.value_or("?");
  if (key.lock == LockState::live) return taken + ", expires in " + whole_seconds(expires_in);
  return taken + ", expired " + whole_seconds(-expires_in) + " ago";
}

std::string describe_lock(const KeyDetails& key, std::chrono::milliseconds lock_timeout) {
  switch (key.lock) {
    case LockState::live:
      return "live: " + lock_phrase(key) + " (IDEMPOTENCY_KEY_LOCK_TIMEOUT " +
             whole_seconds(db::seconds_of(lock_timeout)) + ")";
    case LockState::expired:
      return "expired: " + lock_phrase(key) + "; the next retry or completer pass takes it over";
    case LockState::none:
      break;
  }
  return "none";
}

// `ride` is what rides_of_keys found for the key, if anything.
void write_key_json(JsonOutput& out, const KeyDetails& key, const KeyRide* ride, std::chrono::milliseconds lock_timeout,
                    bool with_body) {
  out.field("id", key.id)
      .field("user_id", key.user_id)
      .field("email", key.email)
      .field("idempotency_key", key.idempotency_key)
      .field("key_tag", auth::log_tag(key.idempotency_key))
      .field("request_method", key.request_method)
      .field("request_path", key.request_path)
      .field("recovery_point", key.recovery_point)
      .field("created_at", key.created_at)
      .field("age_seconds", key.age_seconds)
      .field("last_run_at", key.last_run_at)
      .field("since_last_run_seconds", key.since_last_run_seconds);
  out.begin_object("lock")
      .field("state", idempotency::lock_state_name(key.lock))
      .field("live", key.lock == LockState::live)
      .field("locked_at", key.locked_at)
      .field("expires_in_seconds", key.lock_expires_in_seconds)
      .field("timeout_seconds", db::seconds_of(lock_timeout))
      .end_object();
  out.field("attempts", key.attempts)
      .field("last_error", key.last_error)
      .field("response_code", key.response_code)
      .field("payment_idempotency_key", key.payment_idempotency_key)
      .field("ride_id", ride ? std::optional<std::int64_t>(ride->ride_id) : std::nullopt)
      .field("stripe_charge_id", ride ? ride->stripe_charge_id : std::nullopt);
  if (with_body) out.field("response_body", key.response_body);
}

void print_key(const KeyDetails& key, const KeyRide* made, std::chrono::milliseconds lock_timeout, bool with_body) {
  std::string stored = "none (unfinished)";
  if (key.response_code) {
    stored = std::to_string(*key.response_code) + (with_body ? "" : " (body not shown: --body prints it)");
  }
  std::string ride = "none";
  if (made) ride = std::to_string(made->ride_id) + ", charge " + made->stripe_charge_id.value_or("none yet");
  std::vector<std::pair<std::string, std::string>> fields{
      {"key id", std::to_string(key.id)},
      {"user", printable(key.email) + " (user " + std::to_string(key.user_id) + ")"},
      {"idempotency key", printable(key.idempotency_key) + " (log tag " + auth::log_tag(key.idempotency_key) + ")"},
      {"request", printable(key.request_method) + " " + printable(key.request_path)},
      {"recovery point", printable(key.recovery_point)},
      {"created", key.created_at + ", " + whole_seconds(key.age_seconds) + " ago"},
      {"last run", key.last_run_at + ", " + whole_seconds(key.since_last_run_seconds) + " ago"},
      {"lock", describe_lock(key, lock_timeout)},
      {"attempts", std::to_string(key.attempts) + " (failed completer re-drives)"},
      {"last error", key.last_error ? printable(*key.last_error) : "none"},
      {"stored response", stored},
      {"payment key", key.payment_idempotency_key},
      {"ride", ride},
  };
  if (with_body) fields.emplace_back("stored body", key.response_body ? printable(*key.response_body, 65536) : "none");
  print_fields(fields);
}

int keys_show(const std::vector<std::string>& args) {
  auto flags = Flags::parse(args, 2, {{}, {"email", "key", "id"}, {"json", "body"}}, "keys show");
  const bool by_id = flags.has("id");
  if (by_id ? flags.has("email") || flags.has("key") : !(flags.has("email") && flags.has("key"))) {
    throw cli::UsageError("keys show: give --email and --key, or --id");
  }
  const bool with_body = flags.has("body");
  const std::int64_t id = by_id ? key_id_flag(flags) : 0;  // checked before anything is opened
  auto context = context_from_env();
  db::PooledConnection conn(context.database.url, context.database.session);

  std::optional<KeyDetails> key;
  if (by_id) {
    key = idempotency::find_key_by_id(conn, id, context.lock_timeout, with_body);
    if (!key) {
      log::error("no such key", {{"key_id", id}});
      return cli::kExitNotFound;
    }
  } else {
    auto lookup =
        idempotency::find_key(conn, flags.value("email"), flags.value("key"), context.lock_timeout, with_body);
    if (!lookup.user_found) {
      log::error("no such user", {{"email", flags.value("email")}});
      return cli::kExitNotFound;
    }
    if (!lookup.key) {
      if (lookup.archived_at) {
        log::error("no such key: the reaper archived it unfinished (see `archive list`)",
                   {{"key", auth::log_tag(flags.value("key"))}, {"archived_at", *lookup.archived_at}});
      } else {
        log::error("no such key for this user", {{"key", auth::log_tag(flags.value("key"))}});
      }
      return cli::kExitNotFound;
    }
    key = std::move(lookup.key);
  }

  const auto rides = rides_of_keys(conn, {key->id});
  const auto ride = rides.find(key->id);
  const KeyRide* made = ride == rides.end() ? nullptr : &ride->second;
  if (flags.has("json")) {
    JsonOutput out;
    out.begin_object();
    write_key_json(out, *key, made, context.lock_timeout, with_body);
    out.end_object().print();
  } else {
    print_key(*key, made, context.lock_timeout, with_body);
  }
  return cli::kExitOk;
}

int keys_list(const std::vector<std::string>& args) {
  auto flags = Flags::parse(args, 2, {{}, {"older-than", "limit"}, {"unfinished", "json"}}, "keys list");
  if (!flags.has("unfinished")) {
    throw cli::UsageError("keys list: --unfinished is required (the only listing there is)");
  }
  const double older_than = flags.seconds("older-than", kMaxAgeSeconds).value_or(0);
  const auto limit = flags.integer("limit", kDefaultKeyListLimit, 1, kMaxKeyListLimit);
  auto context = context_from_env();
  db::PooledConnection conn(context.database.url, context.database.session);
  auto listing = idempotency::list_unfinished_keys(
      conn, std::chrono::milliseconds(static_cast<std::int64_t>(older_than * 1000)), limit, context.lock_timeout);

  if (flags.has("json")) {
    std::vector<std::int64_t> key_ids;
    for (const auto& key : listing.keys) key_ids.push_back(key.id);
    const auto rides = rides_of_keys(conn, key_ids);
    JsonOutput out;
    out.begin_object()
        .field("older_than_seconds", older_than)
        .field("limit", limit)
        .field("total", listing.total)
        .begin_array("keys");
    for (const auto& key : listing.keys) {
      out.begin_object();
      const auto ride = rides.find(key.id);
      write_key_json(out, key, ride == rides.end() ? nullptr : &ride->second, context.lock_timeout, false);
      out.end_object();
    }
    out.end_array().end_object().print();
    return cli::kExitOk;
  }

  const std::string what = "unfinished keys created more than " + whole_seconds(older_than) + " ago";
  if (listing.keys.empty()) {
    std::printf("no %s\n", what.c_str());
    return cli::kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& key : listing.keys) {
    std::string lock = idempotency::lock_state_name(key.lock);
    if (key.lock == LockState::live) lock += ", " + whole_seconds(key.lock_expires_in_seconds.value_or(0)) + " left";
    rows.push_back({std::to_string(key.id), whole_seconds(key.age_seconds), printable(key.recovery_point), lock,
                    std::to_string(key.attempts), printable(key.email),
                    key.last_error ? printable(*key.last_error, 60) : "-"});
  }
  print_table({"ID", "AGE", "RECOVERY_POINT", "LOCK", "ATTEMPTS", "USER", "LAST_ERROR"}, rows);
  std::printf("%zu of %lld %s, oldest first%s\n", listing.keys.size(), static_cast<long long>(listing.total),
              what.c_str(),
              listing.total > static_cast<std::int64_t>(listing.keys.size()) ? " (raise --limit for more)" : "");
  return cli::kExitOk;
}

struct UnlockReport {
  const char* result;
  int exit_code;
  std::string message;
};

UnlockReport describe_unlock(const idempotency::ManualUnlock& outcome, std::int64_t id,
                             std::chrono::milliseconds lock_timeout) {
  using Result = idempotency::ManualUnlock::Result;
  const std::string name = "key " + std::to_string(id);
  if (outcome.result == Result::not_found)
    return {"not_found", cli::kExitNotFound, "no key with id " + std::to_string(id)};
  const KeyDetails& key = *outcome.before;
  const std::string resumes = "a retry of the request or the completer resumes it at " + printable(key.recovery_point);
  switch (outcome.result) {
    case Result::unlocked:
      if (outcome.forced) {
        return {"unlocked", cli::kExitOk,
                name + ": released its LIVE lock (--force; " + lock_phrase(key) +
                    "): whoever holds it fails its next fence and stops; " + resumes};
      }
      return {"unlocked", cli::kExitOk, name + ": released its expired lock (" + lock_phrase(key) + "); " + resumes};
    case Result::not_locked:
      return {"not_locked", cli::kExitNothingToDo,
              name + " is not locked (recovery point " + printable(key.recovery_point) + "): nothing done"};
    case Result::refused:
      if (key.lock_token.empty()) {
        return {"refused", cli::kExitRefused,
                name +
                    " is locked without a fencing token, which no release can fence on: nothing done; it can be "
                    "taken over once its lock expires (" +
                    lock_phrase(key) + ")"};
      }
      return {"refused", cli::kExitRefused,
              name + "'s lock is live (" + lock_phrase(key) + "; IDEMPOTENCY_KEY_LOCK_TIMEOUT " +
                  whole_seconds(db::seconds_of(lock_timeout)) +
                  "): a request or the completer may be working on it; nothing done. Wait for it to expire, or pass "
                  "--force"};
    case Result::changed:
      return {"changed", cli::kExitRefused,
              name +
                  "'s lock changed hands while we looked (released, finished or taken over): nothing done; look "
                  "again with keys show --id " +
                  std::to_string(id)};
    case Result::not_found:
      break;
  }
  return {"not_found", cli::kExitNotFound, "no key with id " + std::to_string(id)};
}

int keys_unlock(const std::vector<std::string>& args) {
  auto flags = Flags::parse(args, 2, {{"id"}, {}, {"force", "json"}}, "keys unlock");
  const auto id = key_id_flag(flags);
  auto context = context_from_env();
  db::PooledConnection conn(context.database.url, context.database.session);
  auto outcome = idempotency::unlock_by_hand(conn, id, context.lock_timeout, flags.has("force"));
  auto report = describe_unlock(outcome, id, context.lock_timeout);
  if (outcome.result == idempotency::ManualUnlock::Result::unlocked) {
    log::warn("idempotency key unlocked by hand", {{"key_id", id}, {"forced", outcome.forced}});
  }
  if (flags.has("json")) {
    JsonOutput out;
    out.begin_object().field("id", id).field("result", report.result).field("forced", outcome.forced);
    out.field("message", report.message);
    if (outcome.before) {
      const auto rides = rides_of_keys(conn, {id});
      const auto ride = rides.find(id);
      out.begin_object("before");
      write_key_json(out, *outcome.before, ride == rides.end() ? nullptr : &ride->second, context.lock_timeout, false);
      out.end_object();
    }
    out.end_object().print();
  } else {
    std::printf("%s\n", report.message.c_str());
  }
  return report.exit_code;
}

}  // namespace

int run_keys_command(const std::vector<std::string>& args) {
  // args[0] is "keys".
  if (args.size() < 2) throw cli::UsageError(kKeysUsage);
  const std::string& verb = args[1];
  if (verb == "show") return keys_show(args);
  if (verb == "list") return keys_list(args);
  if (verb == "unlock") return keys_unlock(args);
  throw cli::UsageError("unknown keys subcommand \"" + verb + "\" (expected show, list or unlock)");
}

}  // namespace rr::api
