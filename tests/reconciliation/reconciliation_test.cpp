// Reconciliation against the real stand-in provider and a real database: what a restore loses
// (a paid ride with its key and ledger row, a ledger row alone, a cancellation, all of them) is
// rebuilt from the provider's records so that the client's retry replays its original answer and
// nothing is charged or refunded twice; a mismatch is a break; more than a page of records;
// a provider that hangs or fails mid-listing; a dry run; a second pass that finds nothing.
//
// The provider's records are made here as the API makes them (the same derived provider keys and
// the same rr_ metadata), so the tests stand on the provider's side of the contract alone. Until
// the ledger migration is in the schema, the ledger tables are created here as the contract fixes them.
#include <rapidjson/document.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "common/payments/provider_key.hpp"
#include "common/payments/provider_listing.hpp"
#include "common/payments/stripe_client.hpp"
#include "common/reconciliation/reconciliation_pass.hpp"
#include "support/api_process.hpp"
#include "support/process.hpp"
#include "support/ride_fixture.hpp"
#include "support/ride_json.hpp"

using namespace rr::test;
namespace http = rr::http;
namespace payments = rr::payments;
namespace reconciliation = rr::reconciliation;

namespace {

constexpr const char* kParams =
    R"({"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712})";

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct ReconcileFixture : RideFixture {
  ReconcileFixture() {
    // The contract's ledger (owned by its own migration); nothing when the schema has it already.
    db.scalar(
        "CREATE TABLE IF NOT EXISTS provider_charges (stripe_charge_id TEXT PRIMARY KEY, ride_id BIGINT NOT NULL "
        "UNIQUE REFERENCES rides ON DELETE RESTRICT, user_id BIGINT NOT NULL, amount BIGINT NOT NULL CHECK (amount > "
        "0), currency TEXT NOT NULL, recorded_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    db.scalar(
        "CREATE TABLE IF NOT EXISTS provider_refunds (stripe_refund_id TEXT PRIMARY KEY, stripe_charge_id TEXT NOT "
        "NULL UNIQUE REFERENCES provider_charges, ride_id BIGINT NOT NULL UNIQUE, user_id BIGINT NOT NULL, amount "
        "BIGINT NOT NULL, currency TEXT NOT NULL, recorded_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    pool = std::make_unique<rr::db::ConnectionPool>(db.url(), db.session_options(), 2, std::chrono::seconds(5));
    listing = std::make_unique<payments::ProviderListing>(settings(1).payment);
    provider = std::make_unique<payments::StripeClient>(settings(5).payment);
  }

  // POST /v1/charges as the API makes a ride's charge: its derived key and its metadata.
  std::string paid_ride_at_provider(std::int64_t ride_id, const std::string& key, std::int64_t amount = 2000,
                                    std::optional<std::string> ride_id_text = std::nullopt) {
    auto secret = settings(5).payment.provider_key_secret;
    std::vector<std::pair<std::string, std::string>> form = {
        {"amount", std::to_string(amount)},
        {"currency", "usd"},
        {"customer", "cus_alice"},
        {"metadata[rr_user_id]", std::to_string(user_id)},
        {"metadata[rr_ride_id]", ride_id_text.value_or(std::to_string(ride_id))},
        {"metadata[rr_idempotency_key]", key},
        {"metadata[rr_request_params]", kParams},
        {"metadata[rr_ride_created_at]", "2026-11-27T12:00:00.123456Z"}};
    return created_id("/v1/charges", form, payments::charge_provider_key(secret, user_id, key));
  }

  // POST /v1/refunds as the API's cancel makes it.
  std::string refund_at_provider(std::int64_t ride_id, const std::string& charge, const std::string& key) {
    auto secret = settings(5).payment.provider_key_secret;
    std::vector<std::pair<std::string, std::string>> form = {
        {"charge", charge},
        {"reason", "requested_by_customer"},
        {"metadata[rr_user_id]", std::to_string(user_id)},
        {"metadata[rr_ride_id]", std::to_string(ride_id)},
        {"metadata[rr_idempotency_key]", key},
        {"metadata[rr_request_params]", R"({"reason":null,"ride_id":)" + std::to_string(ride_id) + "}"},
        {"metadata[rr_charge]", charge}};
    return created_id("/v1/refunds", form, payments::refund_provider_key(secret, user_id, charge));
  }

  std::string created_id(const std::string& path, const std::vector<std::pair<std::string, std::string>>& form,
                         const std::string& idempotency_key) {
    auto response = http::send({"POST",
                                stripe.base_url() + path,
                                {{"Authorization", "Bearer sk_test_rocket"},
                                 {"Content-Type", "application/x-www-form-urlencoded"},
                                 {"Idempotency-Key", idempotency_key}},
                                http::form_encode(form),
                                std::chrono::seconds(5)});
    BOOST_REQUIRE_MESSAGE(response.status == 200, response.body);
    rapidjson::Document doc;
    doc.Parse(response.body.c_str());
    return doc["id"].GetString();
  }

  reconciliation::PassReport pass(
      bool dry_run = false, reconciliation::UnrebuildablePolicy policy = reconciliation::UnrebuildablePolicy::refund,
      std::chrono::milliseconds grace = std::chrono::hours(1)) {
    reconciliation::PassOptions options;
    options.dry_run = dry_run;
    options.unrebuildable = policy;
    options.refund_grace = grace;
    reconciliation::ReconciliationPass pass(*pool, *listing, *provider, options);
    return pass.run({unix_now() - 3600, unix_now() + 5, true});
  }

  // Deletes behind the API's back, as a restore to an earlier point loses rows: the ledger's
  // insert-only trigger is skipped as a replica skips it.
  void lose(const std::string& sql) {
    pqxx::work tx(db.conn());
    tx.exec("SET LOCAL session_replication_role = replica");
    tx.exec(sql);
    tx.commit();
  }

  std::unique_ptr<rr::db::ConnectionPool> pool;
  std::unique_ptr<payments::ProviderListing> listing;
  std::unique_ptr<payments::StripeClient> provider;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(reconciliation_pass, ReconcileFixture)

BOOST_AUTO_TEST_CASE(a_paid_ride_lost_with_its_key_is_rebuilt_and_the_retry_replays_the_same_201) {
  auto key = new_key();
  auto charge = paid_ride_at_provider(7, key);

  auto report = pass();
  BOOST_TEST(report.rebuilt == 1);
  BOOST_REQUIRE(report.breaks.size() == 1u);
  BOOST_TEST(report.breaks[0].kind == "charge_without_ride");
  BOOST_TEST(db.scalar("SELECT stripe_charge_id FROM rides WHERE id = 7") == charge);
  BOOST_TEST(db.scalar("SELECT ride_id FROM provider_charges WHERE stripe_charge_id = '" + charge + "'") == "7");

  // The client's retry with its own key: the original 201, the same ride, nothing charged again.
  auto retry = post_ride(key);
  BOOST_TEST(retry.status == 201);
  BOOST_TEST(response_header(retry, "Idempotent-Replayed").value_or("") == "true");
  BOOST_TEST(ride_field(retry.body, "id") == "7");
  BOOST_TEST(ride_field(retry.body, "stripe_charge_id") == charge);
  BOOST_TEST(ride_field(retry.body, "created_at") == "2026-11-27T12:00:00.123456Z");
  BOOST_TEST(stripe.charges() == 1);

  // No id a client saw goes to another ride.
  auto next = post_ride(new_key());
  BOOST_REQUIRE(next.status == 201);
  BOOST_TEST(std::stoll(ride_field(next.body, "id")) > 7);
  // Its ledger row, as the finish writes it in the schema's ledger (a no-op once it does).
  db.scalar(
      "INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency) SELECT "
      "stripe_charge_id, id, user_id, 2000, 'usd' FROM rides WHERE id > 7 ON CONFLICT DO NOTHING");

  auto rows = count("reconciliation_breaks");
  auto second = pass();
  BOOST_TEST(second.rebuilt == 0);
  BOOST_TEST(second.breaks.empty());
  BOOST_TEST(count("reconciliation_breaks") == rows);
}

BOOST_AUTO_TEST_CASE(a_lost_ledger_row_is_written_back_and_the_ride_left_alone) {
  auto charge = paid_ride_at_provider(3, new_key());
  pass();
  lose("DELETE FROM provider_charges WHERE stripe_charge_id = '" + charge + "'");
  auto report = pass();
  BOOST_TEST(report.rebuilt == 1);
  BOOST_REQUIRE(report.breaks.size() == 1u);
  BOOST_TEST(report.breaks[0].kind == "charge_without_ledger_row");
  BOOST_TEST(count("provider_charges") == "1");
  BOOST_TEST(count("rides") == "1");
}

BOOST_AUTO_TEST_CASE(a_lost_refund_cancels_the_ride_once_and_the_cancel_retry_replays_its_200) {
  auto charge = paid_ride_at_provider(5, new_key());
  pass();  // the ride rebuilt
  auto cancel_key = new_key();
  auto refund = refund_at_provider(5, charge, cancel_key);

  auto report = pass();
  BOOST_TEST(report.rebuilt == 1);
  BOOST_REQUIRE(report.breaks.size() == 1u);
  BOOST_TEST(report.breaks[0].kind == "refund_without_cancel");
  BOOST_TEST(db.scalar("SELECT stripe_refund_id FROM rides WHERE id = 5") == refund);
  BOOST_TEST(count("provider_refunds") == "1");

  auto retry = cancel_ride("5", cancel_key);
  BOOST_TEST(retry.status == 200);
  BOOST_TEST(response_header(retry, "Idempotent-Replayed").value_or("") == "true");
  BOOST_TEST(ride_field(retry.body, "stripe_refund_id") == refund);
  // Another cancel finds the ride cancelled: nothing refunded again.
  auto other = cancel_ride("5", new_key());
  BOOST_TEST(other.status == 200);
  BOOST_TEST(stripe.refunds() == 1);
  BOOST_TEST(pass().breaks.empty());
}

BOOST_AUTO_TEST_CASE(charge_refund_and_ride_all_lost_come_back_together) {
  auto key = new_key();
  auto charge = paid_ride_at_provider(9, key);
  auto refund = refund_at_provider(9, charge, new_key());
  auto report = pass();
  BOOST_TEST(report.rebuilt == 2);
  BOOST_TEST(db.scalar("SELECT stripe_refund_id FROM rides WHERE id = 9") == refund);
  auto retry = post_ride(key);
  BOOST_TEST(retry.status == 201);
  BOOST_TEST(ride_field(retry.body, "id") == "9");
  BOOST_TEST(stripe.charges() == 1);
  BOOST_TEST(stripe.refunds() == 1);
}

BOOST_AUTO_TEST_CASE(a_charge_whose_amount_differs_from_the_ledger_is_a_break_recorded_once) {
  auto charge = paid_ride_at_provider(4, new_key());
  pass();
  lose("DELETE FROM provider_charges");
  db.scalar("INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency) VALUES ('" + charge +
            "', 4, " + std::to_string(user_id) + ", 2500, 'usd')");
  auto report = pass();
  BOOST_REQUIRE(report.breaks.size() == 1u);
  BOOST_TEST(report.breaks[0].kind == "charge_mismatch");
  BOOST_TEST(report.breaks[0].action == "left_for_review");
  BOOST_TEST(pass().breaks.empty());
  BOOST_TEST(count("reconciliation_breaks WHERE kind = 'charge_mismatch'") == "1");
}

BOOST_AUTO_TEST_CASE(a_ledger_charge_the_provider_does_not_know_is_a_break) {
  db.scalar(
      "INSERT INTO rides (id, origin_lat, origin_lon, target_lat, target_lon, user_id, stripe_charge_id) VALUES "
      "(40, 1, 1, 1, 1, " +
      std::to_string(user_id) + ", 'ch_nobody_knows')");
  db.scalar(
      "INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency) VALUES "
      "('ch_nobody_knows', 40, " +
      std::to_string(user_id) + ", 2000, 'usd')");
  auto report = pass();
  BOOST_REQUIRE(report.breaks.size() == 1u);
  BOOST_TEST(report.breaks[0].kind == "charge_unknown_to_provider");
}

BOOST_AUTO_TEST_CASE(more_than_a_page_of_lost_rides_is_rebuilt_whole) {
  for (int ride = 1; ride <= 105; ++ride) paid_ride_at_provider(ride, new_key());
  auto report = pass();
  BOOST_TEST(report.rebuilt == 105);
  BOOST_TEST(count("rides") == "105");
  auto second = pass();
  BOOST_TEST(second.matched == 105);
  BOOST_TEST(second.rebuilt == 0);
}

BOOST_AUTO_TEST_CASE(a_provider_hanging_mid_listing_stops_the_pass_with_nothing_done_and_the_next_run_finishes) {
  for (int ride = 1; ride <= 101; ++ride) paid_ride_at_provider(ride, new_key());
  // After the first page the provider answers slower than STRIPE_TIMEOUT (1 s here).
  listing->after_page = [&](std::string_view, int page) {
    if (page == 1) stripe.configure(R"({"latency_ms":3000})");
  };
  try {
    pass();
    BOOST_FAIL("the pass finished over a hanging provider");
  } catch (const reconciliation::PassFailed& e) {
    BOOST_TEST_MESSAGE("failed as it should: " << e.what());
    BOOST_TEST(std::string(e.what()).find("page 2") != std::string::npos);
  }
  BOOST_TEST(count("rides") == "0");
  BOOST_TEST(count("reconciliation_breaks") == "0");

  listing->after_page = nullptr;
  stripe.configure(R"({"latency_ms":0})");
  BOOST_TEST(pass().rebuilt == 101);
  BOOST_TEST(pass().rebuilt == 0);
  BOOST_TEST(count("rides") == "101");
}

BOOST_AUTO_TEST_CASE(a_provider_that_cannot_be_reached_fails_the_pass_clearly) {
  paid_ride_at_provider(1, new_key());
  auto unreachable = settings(1).payment;
  unreachable.api_base = "http://127.0.0.1:" + std::to_string(free_port());
  payments::ProviderListing gone(unreachable);
  reconciliation::ReconciliationPass failing(*pool, gone, *provider, {});
  BOOST_CHECK_THROW(failing.run({unix_now() - 3600, unix_now(), true}), reconciliation::PassFailed);
  BOOST_TEST(count("rides") == "0");
  // The lease was given back: the next pass runs.
  BOOST_TEST(pass().rebuilt == 1);
}

BOOST_AUTO_TEST_CASE(a_dry_run_reports_what_it_would_do_and_writes_nothing) {
  paid_ride_at_provider(2, new_key());
  auto report = pass(true);
  BOOST_TEST(report.rebuilt == 1);
  BOOST_TEST(report.breaks.size() == 1u);
  BOOST_TEST(count("rides") == "0");
  BOOST_TEST(count("idempotency_keys") == "0");
  BOOST_TEST(count("reconciliation_breaks") == "0");
  BOOST_TEST(db.scalar("SELECT covered_until IS NULL FROM reconciliation_lease") == "t");
}

BOOST_AUTO_TEST_CASE(an_unrebuildable_charge_is_refunded_after_its_grace_and_only_once) {
  auto charge = paid_ride_at_provider(0, new_key(), 2000, std::string("not-a-ride"));
  auto waiting = pass(false, reconciliation::UnrebuildablePolicy::refund, std::chrono::hours(1));
  BOOST_REQUIRE(waiting.breaks.size() == 1u);
  BOOST_TEST(waiting.breaks[0].action == "refund_after_grace");
  BOOST_TEST(stripe.refunds() == 0);

  auto refunded = pass(false, reconciliation::UnrebuildablePolicy::refund, std::chrono::milliseconds(0));
  BOOST_TEST(refunded.refunded == 1);
  BOOST_TEST(stripe.refunds() == 1);
  auto again = pass(false, reconciliation::UnrebuildablePolicy::refund, std::chrono::milliseconds(0));
  BOOST_TEST(again.refunded == 0);
  BOOST_TEST(again.breaks.empty());
  BOOST_TEST(stripe.refunds() == 1);
}

BOOST_AUTO_TEST_CASE(an_unrebuildable_charge_is_left_for_a_person_when_told_to) {
  paid_ride_at_provider(0, new_key(), 2000, std::string("garbled"));
  auto report = pass(false, reconciliation::UnrebuildablePolicy::leave, std::chrono::milliseconds(0));
  BOOST_REQUIRE(report.breaks.size() == 1u);
  BOOST_TEST(report.breaks[0].action == "left_for_review");
  BOOST_TEST(stripe.refunds() == 0);
}

BOOST_AUTO_TEST_CASE(a_lease_another_completer_holds_is_not_taken_by_this_one) {
  paid_ride_at_provider(3, new_key());
  // What a second completer process writes when it takes the lease: same role, its own pid.
  auto other = reconciliation::lease_holder("completer", static_cast<long>(::getpid()) + 1);
  BOOST_REQUIRE(other != reconciliation::lease_holder("completer", static_cast<long>(::getpid())));
  db.scalar("UPDATE reconciliation_lease SET holder = '" + other + "', expires_at = now() + interval '1 hour'");
  reconciliation::PassOptions options;
  options.role = "completer";
  reconciliation::ReconciliationPass second(*pool, *listing, *provider, options);
  BOOST_CHECK_THROW(second.run({unix_now() - 3600, unix_now(), true}), reconciliation::PassAlreadyRunning);
  BOOST_TEST(count("rides") == "0");
  BOOST_TEST(db.scalar("SELECT holder FROM reconciliation_lease") == other);
}

// A restore brings the lease row back as it was at the restore point: a pass running then left
// it held by a process of the replaced history, for up to an hour.
BOOST_AUTO_TEST_CASE(a_lease_restored_from_before_an_open_fence_does_not_hold_the_pass_back) {
  paid_ride_at_provider(4, new_key());
  db.scalar(
      "UPDATE reconciliation_lease SET holder = 'completer on old-host pid 7', "
      "expires_at = now() + interval '3600 seconds' - interval '2 minutes'");
  BOOST_CHECK_THROW(pass(), reconciliation::PassAlreadyRunning);
  db.scalar(
      "INSERT INTO write_fences (reason, reconcile_since) VALUES ('restored to test', now() - interval '1 hour')");
  auto report = pass();
  BOOST_TEST(report.rebuilt == 1);
  BOOST_REQUIRE(report.reopened_fences.size() == 1u);
  BOOST_TEST(count("write_fences WHERE reopened_at IS NULL") == "0");
  BOOST_TEST(db.scalar("SELECT holder IS NULL FROM reconciliation_lease") == "t");
}

BOOST_AUTO_TEST_CASE(a_lease_taken_after_the_fence_closed_still_holds) {
  db.scalar(
      "INSERT INTO write_fences (reason, reconcile_since, closed_at) VALUES ('restored to test', now() - interval "
      "'1 hour', now() - interval '10 minutes')");
  db.scalar(
      "UPDATE reconciliation_lease SET holder = 'completer on new-host pid 8', "
      "expires_at = now() + interval '3600 seconds' - interval '1 minute'");
  BOOST_CHECK_THROW(pass(), reconciliation::PassAlreadyRunning);
  BOOST_TEST(count("write_fences WHERE reopened_at IS NULL") == "1");
}

BOOST_AUTO_TEST_CASE(a_pass_covering_an_open_fence_reopens_it) {
  db.scalar(
      "INSERT INTO write_fences (reason, reconcile_since) VALUES ('restored to test', now() - interval '10 "
      "minutes')");
  pass(true);
  BOOST_TEST(count("write_fences WHERE reopened_at IS NULL") == "1");
  auto report = pass();
  BOOST_REQUIRE(report.reopened_fences.size() == 1u);
  BOOST_TEST(report.reopened_fences[0] == "restored to test");
  BOOST_TEST(count("write_fences WHERE reopened_at IS NULL") == "0");
}

BOOST_AUTO_TEST_CASE(a_fenced_api_refuses_writes_serves_reads_and_reopens_after_the_pass) {
  db.scalar(
      "INSERT INTO write_fences (reason, reconcile_since) VALUES ('restored to 2026-11-27T12:00:00Z', now() - "
      "interval '10 minutes')");
  ApiProcess api(db, stripe);
  auto write = api.post_ride(token, new_key());
  BOOST_TEST(write.status == 503);
  BOOST_TEST(write.header("Retry-After") == "30");
  auto ready = api.get("/readyz");
  // Still in the balancer (reads work), saying that writes are closed and why.
  BOOST_TEST(ready.status == 200);
  BOOST_TEST(ready.body.find("\"writes\":\"closed") != std::string::npos, ready.body);
  BOOST_TEST(ready.body.find("restored to 2026-11-27T12:00:00Z") != std::string::npos, ready.body);
  BOOST_TEST(api.get("/rides", token).status == 200);
  BOOST_TEST(stripe.charges() == 0);

  BOOST_TEST(pass().reopened_fences.size() == 1u);
  BOOST_TEST(api.wait_for_output("writes reopened", std::chrono::seconds(10)));
  BOOST_TEST(api.post_ride(token, new_key()).status == 201);
  auto reopened = api.get("/readyz");
  BOOST_TEST(reopened.status == 200);
  BOOST_TEST(reopened.body == "{\"status\":\"ready\"}");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reconcile_command)

BOOST_AUTO_TEST_CASE(a_bad_time_is_a_usage_error_naming_the_flag) {
  auto result = run_command({binary("rocket-rides-api"), "reconcile", "--since", "yesterday"},
                            {{"DATABASE_URL", "postgresql://127.0.0.1:1/none"}, {"STRIPE_API_KEY", "sk_test_x"}});
  BOOST_TEST(result.exit_code == 2);
  BOOST_TEST(result.err.find("--since") != std::string::npos, result.err);
}

BOOST_FIXTURE_TEST_CASE(the_command_prints_its_summary_and_each_break, ReconcileFixture) {
  paid_ride_at_provider(12, new_key());
  EnvChanges env = {{"DATABASE_URL", db.url()},
                    {"DATABASE_PREPARED_STATEMENTS", db.prepared_statements_setting()},
                    {"STRIPE_API_BASE", stripe.base_url()},
                    {"STRIPE_API_KEY", "sk_test_rocket"}};
  auto result = run_command({binary("rocket-rides-api"), "reconcile", "--since", "2020-01-01T00:00:00Z"}, env);
  BOOST_TEST(result.exit_code == 0, result.err);
  BOOST_TEST(result.out.starts_with("matched=0 rebuilt=1 refunded=0 breaks=1\n"), result.out);
  BOOST_TEST(result.out.find("break kind=charge_without_ride") != std::string::npos, result.out);
  auto again = run_command({binary("rocket-rides-api"), "reconcile", "--since", "2020-01-01T00:00:00Z"}, env);
  BOOST_TEST(again.out == "matched=1 rebuilt=0 refunded=0 breaks=0\n", again.out);
}

BOOST_AUTO_TEST_SUITE_END()
