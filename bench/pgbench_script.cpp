// Prints the pgbench scripts that replay, round trip for round trip, the SQL one POST /rides runs,
// from the same calls the product sends (create_ride_call and record_charge_call of
// common/rides/ride_flow.hpp, rendered as the API sends them), so the SQL baseline cannot drift
// from the request path.
//
//   rocket-rides-bench-sql new-key   a new key: one call creates the key with its ride,
//                                    (the provider call), one records the charge and the 201
//   rocket-rides-bench-sql replay    a finished key looked up again: the same first query
//   rocket-rides-bench-sql defines   NAME=VALUE lines for pgbench -D: the request's constant values
//   rocket-rides-bench-sql count new-key|replay [prepared|unprepared]
//                                    statements per transaction (pg_stat_statements counts a SET
//                                    LOCAL and the call of a query apart) for the API's sessions in
//                                    that mode (DATABASE_PREPARED_STATEMENTS; default: on); without
//                                    prepared statements each query sets its own statement bound
//   rocket-rides-bench-sql pgoptions the PGOPTIONS for pgbench's sessions: what the API's pooled
//                                    sessions carry from their start (the statement bound, in
//                                    prepared-statement mode, the default), or an empty line
//   rocket-rides-bench-sql protocol  pgbench's -M for the scripts: prepared where the API's
//                                    sessions send prepared calls (the default), else simple
//
// The scripts are for `pgbench -M` of `protocol` (a query of two statements, where the API sends
// one, can only be simple) and expect -D user_id=N -D lock_token=UUID (plus -D replay_key=KEY for
// replay) besides the `defines` lines. The product's calls are built with sentinel values, and every argument is then
// replaced by the pgbench variable whose value it holds: an argument no variable holds stops the generator, so every
// value the script sends is one the bench defines. pgbench substitutes :variables inside the quoted literals textually
// (simple), or sends them as the parameters (prepared); the defined values hold no quote.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/db/one_trip_call.hpp"
#include "common/db/prepared_calls.hpp"
#include "common/db/session_options.hpp"
#include "common/idempotency/key_acquisition.hpp"
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_params.hpp"
#include "common/rides/ride_response.hpp"

namespace {

// What the API stores for POST /rides (kMethod and kPath of common/api/post_rides.cpp).
constexpr const char* kMethod = "POST";
constexpr const char* kPath = "/rides";
constexpr const char* kOriginIp = "127.0.0.1";
constexpr const char* kLockTimeoutSeconds = "90";  // IDEMPOTENCY_KEY_LOCK_TIMEOUT's default

rr::rides::RideParams bench_params() { return {37.7749, -122.4194, 37.8044, -122.2712}; }

// A 201 body as the API stores it: the shape and size of a real one, with a charge id of the
// stand-in provider's length.
std::string created_body() {
  auto params = bench_params();
  rr::rides::RideView ride;
  ride.id = 1234567;
  ride.origin_lat = rr::rides::format_coordinate(params.origin_lat);
  ride.origin_lon = rr::rides::format_coordinate(params.origin_lon);
  ride.target_lat = rr::rides::format_coordinate(params.target_lat);
  ride.target_lon = rr::rides::format_coordinate(params.target_lon);
  ride.stripe_charge_id = "ch_3PbenchAbCdEfGhIjKlMnOpQr";
  ride.created_at = "2025-01-01T12:34:56.789012Z";
  return rr::rides::ride_created_body(ride);
}

std::vector<std::pair<std::string, std::string>> defines() {
  auto params = bench_params();
  return {
      {"method", kMethod},
      {"path", kPath},
      {"params", rr::rides::to_json(params)},
      {"origin_ip", kOriginIp},
      {"lock_timeout", kLockTimeoutSeconds},
      {"origin_lat", rr::rides::format_coordinate(params.origin_lat)},
      {"origin_lon", rr::rides::format_coordinate(params.origin_lon)},
      {"target_lat", rr::rides::format_coordinate(params.target_lat)},
      {"target_lon", rr::rides::format_coordinate(params.target_lon)},
      {"amount", std::to_string(rr::rides::kRideAmountCents)},
      {"currency", rr::rides::kRideCurrency},
      {"status_created", "201"},
      {"created_body", created_body()},
  };
}

// What the generator builds the product's calls with, each standing for a pgbench variable.
constexpr std::int64_t kSentinelUserId = 987654321012345;
constexpr std::int64_t kSentinelKeyId = 987654321012346;
constexpr const char* kSentinelKey = "bench-sentinel-idempotency-key";
constexpr const char* kSentinelToken = "00000000-0000-4000-8000-0000000be0c1";
constexpr const char* kSentinelChargeId = "ch_bench_sentinel_charge_id";

// A pgbench script and the number of SQL statements it sends per transaction.
struct Script {
  std::string text;
  int statements = 0;
  rr::db::SessionOptions session;  // the API's sessions whose queries the script replays
};

// Whether the API's pooled sessions with these options send their calls as prepared statements
// (db::run_one_trip on a lease: in prepared-statement mode).
bool sends_prepared_calls(const rr::db::SessionOptions& session) {
  return session.statements == rr::db::StatementMode::prepared;
}

// One query as the API sends it with the default settings, its arguments replaced by the
// variables that hold them: the statement it prepares (db::prepared_call_sql) when its sessions
// send prepared calls, else the simple query (db::one_trip_query with what a transaction sets
// itself).
void one_trip(Script& s, const char* comment, rr::db::Call call,
              const std::vector<std::pair<std::string, std::string>>& variables, const std::string& gset = "") {
  for (auto& argument : call.arguments) {
    if (!argument) continue;
    auto holder =
        std::find_if(variables.begin(), variables.end(), [&](const auto& v) { return v.second == *argument; });
    if (holder == variables.end()) {
      throw std::runtime_error(call.function + ": no pgbench variable holds the argument " + *argument);
    }
    *argument = ":" + holder->first;
  }
  auto timeout = rr::db::per_transaction_timeout(s.session);
  std::string query;
  if (sends_prepared_calls(s.session)) {
    // The statement the API prepares, its parameters the variables (for pgbench -M prepared),
    // from the last so that $1 does not match the start of $10.
    query = rr::db::prepared_call_sql(call.function, call.arguments.size());
    for (std::size_t i = call.arguments.size(); i >= 1; --i) {
      const auto& argument = call.arguments[i - 1];
      std::string parameter(1, '$');
      parameter += std::to_string(i);
      query.replace(query.find(parameter), parameter.size(), argument ? *argument : std::string("NULL"));
    }
  } else {
    query = rr::db::one_trip_query(call, timeout, [](std::string& out, const std::string& v) { out += v; });
  }
  s.text += "-- " + std::string(comment) + "\n" + query + (gset.empty() ? "" : " \\gset " + gset) + "\n";
  s.statements += timeout.count() > 0 ? 2 : 1;
}

// The variables: the defines, plus the sentinels' per-run and per-transaction ones.
std::vector<std::pair<std::string, std::string>> variables(const std::string& key_variable) {
  auto all = defines();
  all.emplace_back("user_id", std::to_string(kSentinelUserId));
  all.emplace_back(key_variable, kSentinelKey);
  all.emplace_back("lock_token", kSentinelToken);
  all.emplace_back("k_id", std::to_string(kSentinelKeyId));
  all.emplace_back("k_payment_idempotency_key", kSentinelChargeId);
  return all;
}

// The first query of every POST /rides: creates the key with its ride, or finds the key.
void create_with_key(Script& s, const std::string& key_variable) {
  rr::idempotency::KeyRequest request;
  request.user_id = kSentinelUserId;
  request.idempotency_key = kSentinelKey;
  request.method = kMethod;
  request.path = kPath;
  request.params_json = rr::rides::to_json(bench_params());
  request.origin_ip = kOriginIp;
  // The key's id and payment idempotency key become :k_id and :k_payment_idempotency_key. The
  // API stores an HMAC of the key as its provider key (computed in the API, not in PostgreSQL);
  // here the key itself stands for it, the one per-transaction value that is unique per key.
  one_trip(s, "the key and its ride (or the key found), one round trip",
           rr::rides::create_ride_call(request, kSentinelToken, std::stod(kLockTimeoutSeconds), kSentinelKey),
           variables(key_variable), "k_");
}

Script new_key_script(rr::db::SessionOptions session = {}) {
  Script s;
  s.session = session;
  s.text =
      "-- One POST /rides with a new Idempotency-Key, round trip for round trip (generated by\n"
      "-- rocket-rides-bench-sql from the product's calls).\n"
      "-- Keys must be 20 to 255 characters and pgbench has no string functions: a negative\n"
      "-- 19-digit number is 20 characters.\n"
      "\\set key random(-9223372036854775807, -1000000000000000000)\n";
  create_with_key(s, "key");
  s.text +=
      "-- (the API calls the payment provider here, holding no transaction)\n"
      "-- The charge id: unique per key like the provider's; the key's payment idempotency key is one.\n";
  rr::idempotency::KeyRow key;
  key.id = kSentinelKeyId;
  key.user_id = kSentinelUserId;
  key.lock_token = kSentinelToken;
  one_trip(s, "the charge recorded, the receipt staged, the 201 stored, one round trip",
           rr::rides::record_charge_call(key, kSentinelChargeId, {201, created_body()}), variables("key"));
  return s;
}

Script replay_script(rr::db::SessionOptions session = {}) {
  Script s;
  s.session = session;
  s.text =
      "-- A replay of a finished key that the API does not answer from memory (generated by\n"
      "-- rocket-rides-bench-sql from the product's calls).\n";
  create_with_key(s, "replay_key");
  return s;
}

int usage() {
  std::fprintf(stderr,
               "usage: rocket-rides-bench-sql new-key|replay|defines|pgoptions|protocol|count new-key|replay "
               "[prepared|unprepared]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) return usage();
    std::string what = argv[1];
    if (what == "new-key" || what == "replay") {
      std::fputs((what == "new-key" ? new_key_script() : replay_script()).text.c_str(), stdout);
    } else if (what == "count" && (argc == 3 || argc == 4)) {
      std::string which = argv[2];
      if (which != "new-key" && which != "replay") return usage();
      rr::db::SessionOptions session;
      if (argc == 4) {
        std::string mode = argv[3];
        if (mode != "prepared" && mode != "unprepared") return usage();
        if (mode == "unprepared") session.statements = rr::db::StatementMode::unnamed;
      }
      std::printf("%d\n", (which == "new-key" ? new_key_script(session) : replay_script(session)).statements);
    } else if (what == "protocol") {
      std::printf("%s\n", sends_prepared_calls(rr::db::SessionOptions{}) ? "prepared" : "simple");
    } else if (what == "pgoptions") {
      rr::db::SessionOptions session;
      if (rr::db::session_carries_timeout(session)) {
        std::printf("-c statement_timeout=%lld\n", static_cast<long long>(session.statement_timeout.count()));
      } else {
        std::printf("\n");
      }
    } else if (what == "defines") {
      for (const auto& [name, value] : defines()) {
        if (value.find('\n') != std::string::npos) throw std::runtime_error(name + " holds a newline");
        std::printf("%s=%s\n", name.c_str(), value.c_str());
      }
    } else {
      return usage();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rocket-rides-bench-sql: %s\n", e.what());
    return 1;
  }
  return 0;
}
