// The insert-only provider ledger (sql/016) and the metadata every provider call carries
// (common/payments/provider_metadata.hpp): a real database and the stand-in provider, the API's
// App::handle between them. What counts is what the database refuses and what the provider lists.
#include <rapidjson/document.h>

#include <boost/test/unit_test.hpp>
#include <map>
#include <pqxx/pqxx>
#include <string>

#include "common/db/migrations.hpp"
#include "common/http/client.hpp"
#include "common/payments/provider_metadata.hpp"
#include "support/ride_fixture.hpp"
#include "support/ride_json.hpp"

using namespace rr::test;
namespace http = rr::http;

namespace {

using MetadataOf = std::map<std::string, std::map<std::string, std::string>>;  // object id -> metadata

// Every object of a provider list endpoint (GET /v1/charges, /v1/refunds), as Stripe lists them.
MetadataOf listed_metadata(const RideFixture& fixture, const std::string& path) {
  auto answer = http::send({"GET",
                            fixture.stripe.base_url() + path + "?limit=100",
                            {{"Authorization", "Bearer sk_test_rocket"}},
                            "",
                            std::chrono::seconds(5)});
  BOOST_REQUIRE_EQUAL(answer.status, 200);
  rapidjson::Document doc;
  doc.Parse(answer.body.c_str());
  BOOST_REQUIRE_MESSAGE(doc.IsObject() && doc["data"].IsArray(), answer.body);
  MetadataOf listed;
  for (const auto& object : doc["data"].GetArray()) {
    auto& metadata = listed[object["id"].GetString()];
    for (const auto& member : object["metadata"].GetObject()) {
      metadata[member.name.GetString()] = member.value.GetString();
    }
  }
  return listed;
}

// The error a statement raises, as its SQLSTATE ("" when it succeeds).
std::string sqlstate_of(TestDatabase& db, const std::string& sql) {
  try {
    pqxx::work tx(db.conn());
    tx.exec(sql);
    tx.commit();
    return "";
  } catch (const pqxx::sql_error& e) {
    return e.sqlstate();
  }
}

struct LedgerFixture : RideFixture {
  // A ride booked through the API: its id and charge id.
  std::pair<std::string, std::string> book(const std::string& key) {
    auto created = post_ride(key);
    BOOST_TEST_REQUIRE(created.status == 201, created.body);
    return {ride_field(created.body, "id"), ride_field(created.body, "stripe_charge_id")};
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(provider_ledger, LedgerFixture)

BOOST_AUTO_TEST_CASE(a_booked_ride_writes_one_charge_row_with_its_amount_currency_and_user) {
  auto [ride_id, charge_id] = book(new_key());
  BOOST_TEST(count("provider_charges") == "1");
  BOOST_TEST(db.scalar("SELECT concat_ws(' ', stripe_charge_id, ride_id, user_id, amount, currency) "
                       "FROM provider_charges") ==
             charge_id + " " + ride_id + " " + std::to_string(user_id) + " 2000 usd");
  BOOST_TEST(count("provider_refunds") == "0");
}

BOOST_AUTO_TEST_CASE(a_cancel_writes_one_refund_row_for_the_rides_charge) {
  auto [ride_id, charge_id] = book(new_key());
  auto cancelled = cancel_ride(ride_id, new_key());
  BOOST_TEST_REQUIRE(cancelled.status == 200, cancelled.body);
  auto refund_id = ride_field(cancelled.body, "stripe_refund_id");
  BOOST_TEST(count("provider_refunds") == "1");
  BOOST_TEST(db.scalar("SELECT concat_ws(' ', stripe_refund_id, stripe_charge_id, ride_id, user_id, amount, currency) "
                       "FROM provider_refunds") ==
             refund_id + " " + charge_id + " " + ride_id + " " + std::to_string(user_id) + " 2000 usd");
  // A second cancel of the cancelled ride refunds nothing and records nothing.
  BOOST_TEST_REQUIRE(cancel_ride(ride_id, new_key()).status == 200);
  BOOST_TEST(count("provider_refunds") == "1");
}

BOOST_AUTO_TEST_CASE(the_database_refuses_a_second_charge_for_a_ride_and_a_charge_id_on_two_rides) {
  auto [ride_id, charge_id] = book(new_key());
  auto [other_ride, other_charge] = book(new_key());
  // Each finishing function, as a bug that charged twice would call it.
  BOOST_TEST(sqlstate_of(db,
                         "SELECT rides_record_charge_and_stage_receipt_v2((SELECT idempotency_key_id FROM rides "
                         "WHERE id = " +
                             ride_id + "), 'ch_second', 2000, 'usd', " + std::to_string(user_id) + ")") == "23505");
  BOOST_TEST(sqlstate_of(db,
                         "SELECT rides_record_charge_and_stage_receipt_v2((SELECT idempotency_key_id FROM rides "
                         "WHERE id = " +
                             other_ride + "), '" + charge_id + "', 2000, 'usd', " + std::to_string(user_id) + ")") ==
             "23505");
  // Straight into the ledger too: the guarantee is the indexes', not the functions'.
  BOOST_TEST(sqlstate_of(db,
                         "INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency) "
                         "VALUES ('ch_second', " +
                             ride_id + ", 1, 2000, 'usd')") == "23505");
  BOOST_TEST(sqlstate_of(db,
                         "INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency) "
                         "VALUES ('" +
                             charge_id + "', " + other_ride + ", 1, 2000, 'usd')") == "23505");
  BOOST_TEST(db.scalar("SELECT stripe_charge_id FROM rides WHERE id = " + ride_id) == charge_id);
  BOOST_TEST(db.scalar("SELECT stripe_charge_id FROM rides WHERE id = " + other_ride) == other_charge);
  BOOST_TEST(count("provider_charges") == "2");
}

BOOST_AUTO_TEST_CASE(a_coalesced_finish_answers_a_refused_charge_23505_and_commits_the_others) {
  // Two keys at ride_created with their rides, as the first phase leaves them.
  auto key_of = [&](const std::string& key) {
    return db.scalar("SELECT id FROM rides_create_with_key(" + std::to_string(user_id) + ", '" + key +
                     "', 'POST', '/rides', '{}', '', '00000000-0000-0000-0000-00000000000" + key.back() +
                     "', 60, 1, 2, 3, 4, 'pk-" + key + "')");
  };
  auto [ride_id, charge_id] = book(new_key());
  auto first = key_of("coalesced-key-0000000001"), second = key_of("coalesced-key-0000000002");
  pqxx::work tx(db.conn());
  auto rows = tx.exec(
      "SELECT ordinal, coalesce(failed_sqlstate, 'ok') FROM rides_record_charges_and_finish(ARRAY[" + first + ", " +
      second +
      "]::bigint[], ARRAY['00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002']::uuid[], "
      "ARRAY['" +
      charge_id + "', 'ch_fresh'], ARRAY[2000, 2000]::bigint[], ARRAY['usd', 'usd'], ARRAY[" + std::to_string(user_id) +
      ", " + std::to_string(user_id) +
      "]::bigint[], ARRAY[201, 201], ARRAY['a', 'b']) "
      "ORDER BY ordinal");
  tx.commit();
  BOOST_TEST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[0][1].as<std::string>() == "23505");  // the charge id is the booked ride's
  BOOST_TEST(rows[1][1].as<std::string>() == "ok");
  BOOST_TEST(db.scalar("SELECT recovery_point FROM idempotency_keys WHERE id = " + first) == "ride_created");
  BOOST_TEST(db.scalar("SELECT count(*) FROM provider_charges WHERE stripe_charge_id = 'ch_fresh'") == "1");
}

BOOST_AUTO_TEST_CASE(the_ledger_refuses_update_and_delete) {
  auto [ride_id, charge_id] = book(new_key());
  BOOST_TEST_REQUIRE(cancel_ride(ride_id, new_key()).status == 200);
  for (const char* table : {"provider_charges", "provider_refunds"}) {
    BOOST_TEST(sqlstate_of(db, std::string("UPDATE ") + table + " SET amount = 1") == "23001");
    BOOST_TEST(sqlstate_of(db, std::string("DELETE FROM ") + table) == "23001");
  }
  BOOST_TEST(db.scalar("SELECT amount FROM provider_charges") == "2000");
  BOOST_TEST(count("provider_refunds") == "1");
}

BOOST_AUTO_TEST_CASE(the_providers_listed_charge_and_refund_carry_the_rides_metadata) {
  auto key = new_key();
  auto [ride_id, charge_id] = book(key);
  auto created_at = db.scalar(
      "SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM rides WHERE id = " +
      ride_id);
  auto charges = listed_metadata(*this, "/v1/charges");
  BOOST_TEST_REQUIRE(charges.count(charge_id) == 1u);
  auto& charge = charges[charge_id];
  BOOST_TEST(charge[rr::payments::kMetadataUserId] == std::to_string(user_id));
  BOOST_TEST(charge[rr::payments::kMetadataRideId] == ride_id);
  BOOST_TEST(charge[rr::payments::kMetadataIdempotencyKey] == key);
  BOOST_TEST(charge[rr::payments::kMetadataRideCreatedAt] == created_at);
  BOOST_TEST(charge[rr::payments::kMetadataRequestParams] ==
             R"({"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712})");

  auto cancel_key = new_key();
  auto cancelled = cancel_ride(ride_id, cancel_key, "reason=changed+my+mind");
  BOOST_TEST_REQUIRE(cancelled.status == 200, cancelled.body);
  auto refunds = listed_metadata(*this, "/v1/refunds");
  auto refund_id = ride_field(cancelled.body, "stripe_refund_id");
  BOOST_TEST_REQUIRE(refunds.count(refund_id) == 1u);
  auto& refund = refunds[refund_id];
  BOOST_TEST(refund[rr::payments::kMetadataUserId] == std::to_string(user_id));
  BOOST_TEST(refund[rr::payments::kMetadataRideId] == ride_id);
  BOOST_TEST(refund[rr::payments::kMetadataIdempotencyKey] == cancel_key);
  BOOST_TEST(refund[rr::payments::kMetadataCharge] == charge_id);
  BOOST_TEST(refund[rr::payments::kMetadataRequestParams] ==
             rr::payments::compact_json(db.scalar(
                 "SELECT request_params::text FROM idempotency_keys WHERE idempotency_key = '" + cancel_key + "'")));
}

BOOST_AUTO_TEST_CASE(a_charge_retried_after_its_answer_was_lost_sends_the_same_metadata_and_is_replayed) {
  // The provider charges and the answer never arrives: the key stays at ride_created, and the
  // retry resumes it without the ride the first run carried (it reads it from the database).
  stripe.configure("{\"drop_next\":1}");
  auto key = new_key();
  auto lost = post_ride(key);
  BOOST_TEST_REQUIRE(lost.status != 201, lost.body);
  auto retried = post_ride(key);
  BOOST_TEST_REQUIRE(retried.status == 201, retried.body);
  BOOST_TEST(stripe.charges() == 1);
  // The provider replays a key only when every parameter, metadata included, is the same (and
  // answers idempotency_error otherwise, which the charge phase would have had to work around).
  auto stats = http::send({"GET", stripe.base_url() + "/_mock/stats", {}, "", std::chrono::seconds(5)});
  rapidjson::Document doc;
  doc.Parse(stats.body.c_str());
  BOOST_TEST_REQUIRE(doc.IsObject(), stats.body);
  BOOST_TEST(doc["replays"].GetInt64() == 1);
  BOOST_TEST(count("provider_charges") == "1");
}

BOOST_AUTO_TEST_CASE(migrating_to_the_ledger_records_the_charges_and_refunds_the_rides_carry) {
  TestDatabase old(/*migrated=*/false);
  std::vector<rr::db::Migration> before_the_ledger;
  for (const auto& migration : rr::db::embedded_migrations()) {
    if (migration.version < 16) before_the_ledger.push_back(migration);
  }
  rr::db::migrate(old.conn(), before_the_ledger, std::vector<rr::db::SqlFunction>{});
  old.scalar("INSERT INTO users (email, stripe_customer_id) VALUES ('old@example.com', 'cus_old')");
  // A charged ride, a refunded one, one never charged, and a charge id a bug put on two rides.
  old.scalar(
      "INSERT INTO rides (origin_lat, origin_lon, target_lat, target_lon, user_id, stripe_charge_id, "
      "stripe_refund_id, cancelled_at) VALUES (1, 2, 3, 4, 1, 'ch_old1', NULL, NULL), "
      "(1, 2, 3, 4, 1, 'ch_old2', 're_old2', now()), (1, 2, 3, 4, 1, NULL, NULL, NULL), "
      "(1, 2, 3, 4, 1, 'ch_old1', NULL, NULL)");
  rr::db::migrate(old.conn(), rr::db::embedded_migrations());
  BOOST_TEST(old.scalar("SELECT string_agg(concat_ws(' ', stripe_charge_id, ride_id, user_id, amount, currency), ', ' "
                        "ORDER BY ride_id) FROM provider_charges") == "ch_old1 1 1 2000 usd, ch_old2 2 1 2000 usd");
  BOOST_TEST(old.scalar("SELECT concat_ws(' ', stripe_refund_id, stripe_charge_id, ride_id, amount) "
                        "FROM provider_refunds") == "re_old2 ch_old2 2 2000");
  // The foreign key holds for new rows, though the copied ones were not scanned again.
  BOOST_TEST(sqlstate_of(old,
                         "INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency) "
                         "VALUES ('ch_nowhere', 999, 1, 2000, 'usd')") == "23503");
  BOOST_TEST(sqlstate_of(old, "DELETE FROM rides WHERE id = 1") == "23503");
}

BOOST_AUTO_TEST_CASE(compact_json_drops_the_spaces_postgresql_renders_and_keeps_the_digits) {
  BOOST_TEST(rr::payments::compact_json(R"({"a": 1.50, "b": [1, "x y"], "c": null})") ==
             R"({"a":1.50,"b":[1,"x y"],"c":null})");
  BOOST_TEST(rr::payments::compact_json("not json") == "not json");
}

BOOST_AUTO_TEST_SUITE_END()
