// A failover that loses commits: the real API process, PostgreSQL and the stand-in
// provider; the rows a lost commit would take with it are deleted behind the API's back, and the
// client retries. What counts is the provider's own ledger (its admin listings), not the API's
// word: one charge per request and one refund per charge, because the provider keys derive from
// the client's request and the charge (PROVIDER_KEY_SECRET) instead of living in the lost rows.
#include <rapidjson/document.h>

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "common/config/settings.hpp"
#include "common/http/client.hpp"
#include "common/payments/provider_key.hpp"
#include "support/api_process.hpp"
#include "support/process.hpp"
#include "support/ride_fixture.hpp"
#include "support/ride_json.hpp"

using namespace rr::test;
namespace http = rr::http;

namespace {

constexpr const char* kSecret = "lost-commit-test-secret-0123456789abcdef";
constexpr const char* kOtherSecret = "another-deployments-secret-0123456789abcdef";

// One object of the stand-in provider's admin listing (GET /_mock/charges or /_mock/refunds).
struct ProviderObject {
  std::string id, idempotency_key, owner;  // owner: the charge's customer, the refund's charge
};

struct LostCommitFixture : ApiFixture {
  std::int64_t user_id = 0;

  LostCommitFixture() { user_id = std::stoll(db.scalar("SELECT id FROM users WHERE email = 'alice@example.com'")); }

  // Without the finished-response cache a retry reaches the database, as it would in a new
  // process after the failover.
  void start_api_with_secret(const char* secret) {
    start_api({{"PROVIDER_KEY_SECRET", secret}, {"RESPONSE_CACHE_TTL", "0"}});
  }

  std::vector<ProviderObject> provider_listing(const char* path, const char* owner_field) const {
    auto answer = http::send({"GET", stripe.base_url() + path, {}, "", std::chrono::seconds(5)});
    BOOST_REQUIRE_EQUAL(answer.status, 200);
    rapidjson::Document doc;
    doc.Parse(answer.body.c_str());
    BOOST_REQUIRE_MESSAGE(doc.IsArray(), answer.body);
    std::vector<ProviderObject> objects;
    for (const auto& object : doc.GetArray()) {
      objects.push_back(
          {object["id"].GetString(), object["idempotency_key"].GetString(), object[owner_field].GetString()});
    }
    return objects;
  }
  std::vector<ProviderObject> charges() const { return provider_listing("/_mock/charges", "customer"); }
  std::vector<ProviderObject> refunds() const { return provider_listing("/_mock/refunds", "charge"); }

  http::ClientResponse cancel(const std::string& ride_id, const std::string& key) {
    return http::send({"POST",
                       api->url("/rides/" + ride_id + "/cancel"),
                       {{"Authorization", "Bearer " + token},
                        {"Idempotency-Key", key},
                        {"Content-Type", "application/x-www-form-urlencoded"}},
                       "",
                       std::chrono::seconds(10)});
  }

  // What a failover that lost the commits of a new ride takes with it: the key, its ride, and what
  // the ride's phases wrote beside it (the audit record, the staged receipt, the ledger's charge).
  void lose_ride(const std::string& ride_id) {
    db.past_the_ledger_guard("DELETE FROM provider_charges WHERE ride_id = " + ride_id);
    db.scalar("DELETE FROM staged_jobs WHERE job_args->0->>'ride_id' = '" + ride_id + "'");
    db.scalar("DELETE FROM audit_records WHERE resource_type = 'ride' AND resource_id = " + ride_id);
    db.scalar("DELETE FROM idempotency_keys WHERE id = (SELECT idempotency_key_id FROM rides WHERE id = " + ride_id +
              ")");
    db.scalar("DELETE FROM rides WHERE id = " + ride_id);
  }

  // What a failover that lost the commits of a cancellation takes with it: the cancel's key, the
  // ride's cancellation and what was staged, audited and put in the ledger with it.
  void lose_cancellation(const std::string& ride_id) {
    db.past_the_ledger_guard("DELETE FROM provider_refunds WHERE ride_id = " + ride_id);
    db.scalar("DELETE FROM staged_jobs WHERE job_name = 'send_cancellation_receipt' AND job_args->0->>'ride_id' = '" +
              ride_id + "'");
    db.scalar("DELETE FROM audit_records WHERE action = 'cancel_ride' AND resource_id = " + ride_id);
    db.scalar("DELETE FROM idempotency_keys WHERE request_path = '/rides/" + ride_id + "/cancel'");
    db.scalar("UPDATE rides SET cancelled_at = NULL, stripe_refund_id = NULL, cancel_reason = NULL WHERE id = " +
              ride_id);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(lost_commit, LostCommitFixture)

BOOST_AUTO_TEST_CASE(a_retry_after_the_rides_commits_were_lost_charges_the_card_once) {
  start_api_with_secret(kSecret);
  auto key = new_key();
  auto first = api->post_ride(token, key);
  BOOST_TEST_REQUIRE(first.status == 201, first.body);
  auto charge_id = ride_field(first.body, "stripe_charge_id");
  auto expected_key = rr::payments::charge_provider_key(kSecret, user_id, key);
  BOOST_TEST(db.scalar("SELECT payment_idempotency_key FROM idempotency_keys") == expected_key);

  lose_ride(ride_field(first.body, "id"));
  BOOST_TEST_REQUIRE(db.scalar("SELECT count(*) FROM idempotency_keys") == "0");
  BOOST_TEST_REQUIRE(db.scalar("SELECT count(*) FROM rides") == "0");

  auto retry = api->post_ride(token, key);
  BOOST_TEST_REQUIRE(retry.status == 201, retry.body);
  // The provider replayed its charge: the new ride records the one charge the card got.
  BOOST_TEST(ride_field(retry.body, "stripe_charge_id") == charge_id);
  auto listed = charges();
  BOOST_TEST_REQUIRE(listed.size() == 1u);
  BOOST_TEST(listed[0].id == charge_id);
  BOOST_TEST(listed[0].owner == "cus_alice");
  BOOST_TEST(listed[0].idempotency_key == expected_key);
}

BOOST_AUTO_TEST_CASE(a_cancel_retried_after_its_commits_were_lost_refunds_once_whatever_its_key) {
  start_api_with_secret(kSecret);
  auto created = api->post_ride(token, new_key());
  BOOST_TEST_REQUIRE(created.status == 201, created.body);
  auto ride_id = ride_field(created.body, "id");
  auto charge_id = ride_field(created.body, "stripe_charge_id");
  auto expected_key = rr::payments::refund_provider_key(kSecret, user_id, charge_id);

  auto cancel_key = new_key();
  auto cancelled = cancel(ride_id, cancel_key);
  BOOST_TEST_REQUIRE(cancelled.status == 200, cancelled.body);
  auto refund_id = ride_field(cancelled.body, "stripe_refund_id");
  BOOST_TEST_REQUIRE(refund_id.starts_with("re_"), refund_id);
  BOOST_TEST(db.scalar("SELECT refund_idempotency_key FROM rides WHERE id = " + ride_id) == expected_key);

  // The same request again, then another request with a key of its own: each after the commits of
  // the cancellation before it were lost. Each gets the provider's replay of the one refund (a
  // second provider key would have met charge_already_refunded and shown no refund id).
  for (const auto& key : {cancel_key, new_key()}) {
    lose_cancellation(ride_id);
    BOOST_TEST_REQUIRE(db.scalar("SELECT cancelled_at IS NULL FROM rides WHERE id = " + ride_id) == "t");
    auto again = cancel(ride_id, key);
    BOOST_TEST_REQUIRE(again.status == 200, again.body);
    BOOST_TEST(ride_field(again.body, "stripe_refund_id") == refund_id);
  }
  auto listed = refunds();
  BOOST_TEST_REQUIRE(listed.size() == 1u);
  BOOST_TEST(listed[0].id == refund_id);
  BOOST_TEST(listed[0].owner == charge_id);
  BOOST_TEST(listed[0].idempotency_key == expected_key);
}

BOOST_AUTO_TEST_CASE(another_deployments_secret_gives_the_same_request_other_provider_keys) {
  start_api_with_secret(kSecret);
  auto key = new_key();
  auto first = api->post_ride(token, key);
  BOOST_TEST_REQUIRE(first.status == 201, first.body);
  lose_ride(ride_field(first.body, "id"));

  // The same user id and client key in a deployment with its own secret (which is also what a
  // secret changed under unfinished requests does: their keys change with it). The API refuses a
  // secret other than the recorded one until the operator rotates it.
  auto rotation = run_command({binary("rocket-rides-api"), "rotate-provider-key"},
                              {{"DATABASE_URL", db.url()},
                               {"DATABASE_PREPARED_STATEMENTS", db.prepared_statements_setting()},
                               {"STRIPE_API_KEY", "sk_test_rocket"},
                               {"PROVIDER_KEY_SECRET", kOtherSecret}});
  BOOST_TEST_REQUIRE(rotation.exit_code == 0, rotation.out << rotation.err);
  start_api_with_secret(kOtherSecret);
  auto second = api->post_ride(token, key);
  BOOST_TEST_REQUIRE(second.status == 201, second.body);
  auto listed = charges();
  BOOST_TEST_REQUIRE(listed.size() == 2u);
  BOOST_TEST(listed[0].idempotency_key == rr::payments::charge_provider_key(kSecret, user_id, key));
  BOOST_TEST(listed[1].idempotency_key == rr::payments::charge_provider_key(kOtherSecret, user_id, key));
  BOOST_TEST(listed[0].idempotency_key != listed[1].idempotency_key);
}

BOOST_AUTO_TEST_CASE(a_live_stripe_key_without_a_secret_keeps_the_api_and_the_completer_from_starting) {
  ApiProcess refused(db, stripe, {{"STRIPE_API_KEY", "sk_live_rocket"}, {"PROVIDER_KEY_SECRET", std::nullopt}}, {},
                     ApiProcess::WaitFor::nothing);
  auto status = refused.wait(std::chrono::seconds(10));
  BOOST_TEST_REQUIRE(status.has_value(), "still running with a live key and no secret");
  BOOST_TEST(*status == 2, refused.output());
  BOOST_TEST(refused.output().find("variable=PROVIDER_KEY_SECRET problem=\"is not set;") != std::string::npos,
             refused.output());

  auto completer = run_command({binary("rocket-rides-completer"), "--once"}, {{"DATABASE_URL", db.url()},
                                                                              {"STRIPE_API_BASE", stripe.base_url()},
                                                                              {"STRIPE_API_KEY", "rk_live_rocket"},
                                                                              {"PROVIDER_KEY_SECRET", "too-short"}});
  BOOST_TEST(completer.exit_code == 2, completer.out << completer.err);
  BOOST_TEST(
      (completer.out + completer.err).find("variable=PROVIDER_KEY_SECRET problem=\"is 9 bytes;") != std::string::npos,
      completer.out << completer.err);
}

BOOST_AUTO_TEST_CASE(a_test_key_without_a_secret_starts_and_says_which_secret_it_uses) {
  start_api({{"PROVIDER_KEY_SECRET", std::nullopt}});
  BOOST_TEST(api->wait_for_output("PROVIDER_KEY_SECRET is not set", std::chrono::seconds(5)), api->output());
  BOOST_TEST(api->output().find(rr::config::kDevelopmentProviderKeySecret) != std::string::npos, api->output());
  auto key = new_key();
  BOOST_TEST_REQUIRE(api->post_ride(token, key).status == 201);
  BOOST_TEST(charges().at(0).idempotency_key ==
             rr::payments::charge_provider_key(rr::config::kDevelopmentProviderKeySecret, user_id, key));
}

BOOST_AUTO_TEST_SUITE_END()
