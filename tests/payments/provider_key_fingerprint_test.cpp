// The start-up check of PROVIDER_KEY_SECRET (common/payments/provider_key_fingerprint.hpp): the real
// API, completer and `rotate-provider-key` against a real database. A process with another secret
// than the one recorded refuses to start, with one line and exit status 6; the same secret starts;
// two processes on an empty record agree on one row; a rotation lets the new secret start and
// keeps the old one out.
#include <barrier>
#include <boost/test/unit_test.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/cli/exit_codes.hpp"
#include "common/cli/refused_start.hpp"
#include "common/db/connection.hpp"
#include "common/payments/provider_key.hpp"
#include "common/payments/provider_key_fingerprint.hpp"
#include "support/api_process.hpp"
#include "support/process.hpp"

using namespace rr::test;

namespace {

constexpr const char* kSecret = "provider-key-fingerprint-test-0123456789abcdef";
constexpr const char* kOtherSecret = "a-rotated-provider-key-secret-0123456789abcdef";
constexpr const char* kRefusal = "refusing to start: PROVIDER_KEY_SECRET differs from the one recorded at ";

struct FingerprintFixture : ApiFixture {
  EnvChanges env_with(const char* secret) const {
    return {{"DATABASE_URL", db.url()},
            {"DATABASE_PREPARED_STATEMENTS", db.prepared_statements_setting()},
            {"STRIPE_API_BASE", stripe.base_url()},
            {"STRIPE_API_KEY", "sk_test_rocket"},
            {"PROVIDER_KEY_SECRET", secret}};
  }
  CommandResult completer_once(const char* secret) const {
    return run_command({binary("rocket-rides-completer"), "--once"}, env_with(secret));
  }
  CommandResult rotate(const char* secret, bool dry_run = false) const {
    std::vector<std::string> argv{binary("rocket-rides-api"), "rotate-provider-key"};
    if (dry_run) argv.push_back("--dry-run");
    return run_command(argv, env_with(secret));
  }
  // Starts an API expected to refuse; returns its exit status (nothing: it kept running) and output.
  std::pair<std::optional<int>, std::string> refused_api(const char* secret) {
    ApiProcess refused(db, stripe, {{"PROVIDER_KEY_SECRET", secret}}, {}, ApiProcess::WaitFor::nothing);
    auto status = refused.wait(std::chrono::seconds(10));
    return {status, refused.output()};
  }
  std::string recorded() { return db.scalar("SELECT fingerprint FROM provider_key_fingerprint"); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(provider_key_fingerprint, FingerprintFixture)

BOOST_AUTO_TEST_CASE(a_process_started_with_another_secret_refuses_with_one_line_and_its_own_status) {
  start_api({{"PROVIDER_KEY_SECRET", kSecret}});
  BOOST_TEST(recorded() == rr::payments::provider_key_fingerprint(kSecret));
  api.reset();

  auto [status, output] = refused_api(kOtherSecret);
  BOOST_TEST_REQUIRE(status.has_value(), "the API started with another secret: " << output);
  BOOST_TEST(*status == rr::cli::kExitProviderKeyMismatch, output);
  BOOST_TEST(output.find(kRefusal) != std::string::npos, output);
  BOOST_TEST(output.find("run `rocket-rides-api rotate-provider-key`") != std::string::npos, output);
  BOOST_TEST(output.find(kOtherSecret) == std::string::npos, output);  // never the secret itself

  auto completer = completer_once(kOtherSecret);
  BOOST_TEST(completer.exit_code == rr::cli::kExitProviderKeyMismatch, completer.out << completer.err);
  BOOST_TEST((completer.out + completer.err).find(kRefusal) != std::string::npos, completer.out << completer.err);
  BOOST_TEST(recorded() == rr::payments::provider_key_fingerprint(kSecret));  // the refusal changed nothing
}

BOOST_AUTO_TEST_CASE(the_same_secret_starts_again_and_only_its_fingerprint_is_stored) {
  auto first = completer_once(kSecret);
  BOOST_TEST_REQUIRE(first.exit_code == 0, first.out << first.err);
  BOOST_TEST(db.scalar("SELECT recorded_by FROM provider_key_fingerprint") == "first start");
  start_api({{"PROVIDER_KEY_SECRET", kSecret}});
  BOOST_TEST(api->get("/healthz").status == 200);
  auto again = completer_once(kSecret);
  BOOST_TEST(again.exit_code == 0, again.out << again.err);
  BOOST_TEST(db.scalar("SELECT count(*) FROM provider_key_fingerprint") == "1");
  BOOST_TEST(db.scalar("SELECT strpos(fingerprint, '" + std::string(kSecret) + "') FROM provider_key_fingerprint") ==
             "0");
}

// In process, on sessions of their own released at one barrier: the record's race without the
// start-up time of a process blurring it. Each round starts from an empty record.
BOOST_AUTO_TEST_CASE(processes_starting_at_once_on_an_empty_record_agree_on_one_fingerprint) {
  constexpr int kRounds = 20;
  constexpr int kProcesses = 4;
  for (int round = 0; round < kRounds; ++round) {
    db.scalar("DELETE FROM provider_key_fingerprint");
    std::vector<std::unique_ptr<rr::db::Connection>> sessions;
    for (int i = 0; i < kProcesses; ++i) sessions.push_back(std::make_unique<rr::db::Connection>(db.url()));
    // Half the sessions with each secret: exactly one secret wins, and only its holders start.
    std::vector<std::string> outcome(kProcesses);
    std::barrier start(kProcesses);
    std::vector<std::thread> threads;
    for (int i = 0; i < kProcesses; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        try {
          rr::payments::check_provider_key_fingerprint(*sessions[i], i % 2 ? kOtherSecret : kSecret,
                                                       std::chrono::seconds(10));
          outcome[i] = "started";
        } catch (const rr::cli::RefusedStart& e) {
          outcome[i] = e.exit_status() == rr::cli::kExitProviderKeyMismatch ? "refused" : e.what();
        } catch (const std::exception& e) {
          outcome[i] = e.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    BOOST_TEST_REQUIRE(db.scalar("SELECT count(*) FROM provider_key_fingerprint") == "1");
    const bool first_won = recorded() == rr::payments::provider_key_fingerprint(kSecret);
    for (int i = 0; i < kProcesses; ++i) {
      const bool winner = (i % 2 == 0) == first_won;
      BOOST_TEST(outcome[i] == (winner ? "started" : "refused"), "round " << round << " session " << i);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_rotation_lets_the_new_secret_start_and_keeps_the_old_one_out) {
  start_api({{"PROVIDER_KEY_SECRET", kSecret}});
  api.reset();

  auto dry = rotate(kOtherSecret, /*dry_run=*/true);
  BOOST_TEST(dry.exit_code == 0, dry.out << dry.err);
  BOOST_TEST(dry.out.find("dry-run: would record fingerprint=" +
                          rr::payments::provider_key_fingerprint(kOtherSecret).substr(0, 12)) != std::string::npos,
             dry.out);
  BOOST_TEST(recorded() == rr::payments::provider_key_fingerprint(kSecret));

  auto rotated = rotate(kOtherSecret);
  BOOST_TEST_REQUIRE(rotated.exit_code == 0, rotated.out << rotated.err);
  BOOST_TEST(rotated.out.find("recorded fingerprint=") == 0, rotated.out);
  BOOST_TEST(recorded() == rr::payments::provider_key_fingerprint(kOtherSecret));
  BOOST_TEST(db.scalar("SELECT recorded_by FROM provider_key_fingerprint") == "rotation");

  start_api({{"PROVIDER_KEY_SECRET", kOtherSecret}});
  BOOST_TEST(api->get("/healthz").status == 200);
  auto [status, output] = refused_api(kSecret);
  BOOST_TEST(status.value_or(-1) == rr::cli::kExitProviderKeyMismatch, output);
  BOOST_TEST(output.find("(rotation)") != std::string::npos, output);

  auto again = rotate(kOtherSecret);
  BOOST_TEST(again.exit_code == rr::cli::kExitNothingToDo, again.out << again.err);
}

BOOST_AUTO_TEST_SUITE_END()
