// Prints the pgbench scripts that replay, statement for statement, the SQL one POST /rides runs,
// from the same statement constants the product executes (common/idempotency/key_statements.hpp,
// common/rides/ride_statements.hpp), so the SQL baseline cannot drift from the request path.
//
//   rocket-rides-bench-sql new-key   a new key: BEGIN, find-or-create, ride+audit, recovery point,
//                                    COMMIT, (the provider call), BEGIN, charge+receipt, finish, COMMIT
//   rocket-rides-bench-sql replay    a finished key looked up again: BEGIN, find-or-create, COMMIT
//   rocket-rides-bench-sql defines   NAME=VALUE lines for pgbench -D: the request's constant values
//   rocket-rides-bench-sql count new-key|replay   statements per transaction, BEGIN/COMMIT included
//
// The scripts are for `pgbench -M prepared` and expect -D user_id=N -D lock_token=UUID (plus
// -D replay_key=KEY for replay) besides the `defines` lines. Each $n of a statement becomes a
// pgbench :variable; pgbench sends each as a bind parameter of the prepared statement, as libpqxx
// does (pgbench numbers them itself, so a repeated $n travels as one parameter per occurrence,
// with the same value). A string literal that holds ':' (pgbench would take ":MI" in a to_char
// format for a variable) is written as the identical U&'' literal with ':' as \003A, which keeps
// pgbench working without changing what the server runs. The statements call the functions of
// sql/003_request_functions.sql, whose result columns have names, as \gset needs.
#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/db/session_options.hpp"
#include "common/db/transaction.hpp"
#include "common/idempotency/key_statements.hpp"
#include "common/rides/ride_flow.hpp"
#include "common/rides/ride_params.hpp"
#include "common/rides/ride_response.hpp"
#include "common/rides/ride_statements.hpp"

namespace {

namespace idem = rr::idempotency::statements;
namespace rides = rr::rides::statements;

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
      {"ride_created", rr::rides::kRideCreated},
      {"amount", std::to_string(rr::rides::kRideAmountCents)},
      {"currency", rr::rides::kRideCurrency},
      {"status_created", "201"},
      {"created_body", created_body()},
  };
}

// A single-quoted literal (without its quotes) as U&'...' with ':' and '\' escaped.
std::string unicode_literal(const std::string& body) {
  std::string out = "U&'";
  for (char c : body) {
    if (c == ':')
      out += "\\003A";
    else if (c == '\\')
      out += "\\\\";
    else
      out += c;
  }
  return out + "'";
}

// The statement's SQL with $n replaced by :args[n-1] (outside literals), on one line.
std::string pgbench_sql(const rr::db::Statement& statement, const std::vector<std::string>& args) {
  std::string sql = statement.sql, out;
  std::vector<bool> used(args.size(), false);
  for (std::size_t i = 0; i < sql.size();) {
    char c = sql[i];
    if (c == '\'') {
      std::size_t end = i + 1;
      while (true) {
        end = sql.find('\'', end);
        if (end == std::string::npos) throw std::runtime_error(std::string(statement.name) + ": unterminated literal");
        if (end + 1 < sql.size() && sql[end + 1] == '\'') {
          end += 2;  // '' inside a literal
          continue;
        }
        break;
      }
      std::string body = sql.substr(i + 1, end - i - 1);
      bool prefixed = i > 0 && (std::isalnum(static_cast<unsigned char>(sql[i - 1])) || sql[i - 1] == '&');
      if (body.find(':') != std::string::npos) {
        if (prefixed) throw std::runtime_error(std::string(statement.name) + ": prefixed literal holds ':'");
        out += unicode_literal(body);
      } else {
        out += sql.substr(i, end - i + 1);
      }
      i = end + 1;
    } else if (c == '$' && i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      std::size_t end = i + 1;
      while (end < sql.size() && std::isdigit(static_cast<unsigned char>(sql[end]))) ++end;
      std::size_t n = std::stoul(sql.substr(i + 1, end - i - 1));
      if (n < 1 || n > args.size()) {
        throw std::runtime_error(std::string(statement.name) + ": $" + std::to_string(n) + " has no argument");
      }
      used[n - 1] = true;
      out += ":" + args[n - 1];
      i = end;
    } else if (c == ':' && !(i + 1 < sql.size() && sql[i + 1] == ':') && !(i > 0 && sql[i - 1] == ':')) {
      throw std::runtime_error(std::string(statement.name) + ": a ':' outside a literal would be a pgbench variable");
    } else if (c == '\n' || c == '\r') {
      out += ' ';
      ++i;
    } else {
      out += c;
      ++i;
    }
  }
  for (std::size_t n = 0; n < args.size(); ++n) {
    if (!used[n]) throw std::runtime_error(std::string(statement.name) + ": argument " + args[n] + " is unused");
  }
  return out;
}

void statement(std::string& script, int& count, const char* comment, const std::string& sql) {
  script += "-- " + std::string(comment) + "\n" + sql + "\n";
  ++count;
}

// A pgbench script and the number of SQL statements it sends per transaction.
struct Script {
  std::string text;
  int statements = 0;
};

// The product's BEGIN (db::begin_command, with the default DATABASE_STATEMENT_TIMEOUT) in one
// round trip, as the API sends it. pgbench -M prepared refuses a compound command ("cannot insert
// multiple commands into a prepared statement"), so its statements go as one pipeline (one Sync);
// the transaction stays open after it, and pg_stat_statements counts each statement.
void begin(Script& s, const char* comment) {
  const std::string sql = rr::db::begin_command(rr::db::SessionOptions{}.statement_timeout);
  s.text += "-- " + std::string(comment) + "\n\\startpipeline\n";
  std::size_t from = 0;
  for (std::size_t at = sql.find("; ");; at = sql.find("; ", from)) {
    s.text += sql.substr(from, at == std::string::npos ? std::string::npos : at - from) + ";\n";
    ++s.statements;
    if (at == std::string::npos) break;
    from = at + 2;
  }
  s.text += "\\endpipeline\n";
}

Script find_or_create(Script s, const std::string& key_variable) {
  // The key's id and payment idempotency key become :k_id and :k_payment_idempotency_key.
  statement(s.text, s.statements, idem::kFindOrCreate.name,
            pgbench_sql(idem::kFindOrCreate, {"user_id", key_variable, "method", "path", "params", "origin_ip",
                                              "lock_token", "lock_timeout"}) +
                " \\gset k_");
  return s;
}

Script new_key_script() {
  Script s;
  s.text =
      "-- One POST /rides with a new Idempotency-Key, statement for statement (generated by\n"
      "-- rocket-rides-bench-sql from the product's statement constants).\n"
      "-- Keys must be 20 to 255 characters and pgbench has no string functions: a negative\n"
      "-- 19-digit number is 20 characters.\n"
      "\\set key random(-9223372036854775807, -1000000000000000000)\n";
  begin(s, "phase 1: key and ride in one transaction");
  s = find_or_create(std::move(s), "key");
  statement(s.text, s.statements, rides::kInsertRideWithAudit.name,
            pgbench_sql(rides::kInsertRideWithAudit, {"k_id", "origin_lat", "origin_lon", "target_lat", "target_lon",
                                                      "user_id", "params", "origin_ip"}) +
                ";");
  statement(s.text, s.statements, idem::kMoveRecoveryPoint.name,
            pgbench_sql(idem::kMoveRecoveryPoint, {"k_id", "lock_token", "ride_created"}) + ";");
  statement(s.text, s.statements, "end of phase 1", "COMMIT;");
  s.text +=
      "-- (the API calls the payment provider here, holding no transaction)\n"
      "-- The charge id: unique per key like the provider's; the key's payment idempotency key is one.\n";
  begin(s, "phase 2: the charge recorded, the receipt staged, the 201 stored");
  statement(s.text, s.statements, rides::kRecordChargeAndStageReceipt.name,
            pgbench_sql(rides::kRecordChargeAndStageReceipt,
                        {"k_id", "k_payment_idempotency_key", "amount", "currency", "user_id"}) +
                ";");
  statement(s.text, s.statements, idem::kFinish.name,
            pgbench_sql(idem::kFinish, {"k_id", "lock_token", "status_created", "created_body"}) + ";");
  statement(s.text, s.statements, "end of phase 2", "COMMIT;");
  return s;
}

Script replay_script() {
  Script s;
  s.text =
      "-- A replay of a finished key that the API does not answer from memory (generated by\n"
      "-- rocket-rides-bench-sql from the product's statement constants).\n";
  begin(s, "the key lookup's transaction");
  s = find_or_create(std::move(s), "replay_key");
  statement(s.text, s.statements, "end", "COMMIT;");
  return s;
}

int usage() {
  std::fprintf(stderr, "usage: rocket-rides-bench-sql new-key|replay|defines|count new-key|replay\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) return usage();
    std::string what = argv[1];
    if (what == "new-key" || what == "replay") {
      std::fputs((what == "new-key" ? new_key_script() : replay_script()).text.c_str(), stdout);
    } else if (what == "count" && argc == 3) {
      std::string which = argv[2];
      if (which != "new-key" && which != "replay") return usage();
      std::printf("%d\n", (which == "new-key" ? new_key_script() : replay_script()).statements);
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
