// The ride-creation 201 kept small: a finished key stores no body when the 201 is
// rides_created_body_v1 of its ride, names that renderer (1), and every reader renders it back
// through the renderer the key names. Checked here: that rendering
// is ride_created_body's to the byte for awkward rides; a new key stores NULL and replays its
// original bytes from the database (another App, whose memory never saw the key), also after the
// ride is cancelled; a body that is not the rendering is stored verbatim.
#include <rapidjson/document.h>

#include <boost/test/unit_test.hpp>
#include <string>

#include "common/rides/ride_response.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

using rr::test::new_key;
using rr::test::response_header;
using rr::test::RideFixture;

namespace {

constexpr const char* kLock = "00000000-0000-4000-8000-0000000000aa";

// A key at ride_created, locked with kLock, and its ride; the ride's id.
std::int64_t key_with_ride(pqxx::work& tx, std::int64_t user, const std::string& key, const std::string& lat,
                           const std::string& lon, const std::string& created_at, std::int64_t* key_id) {
  *key_id = tx.exec_params(
                  "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
                  "recovery_point, user_id, locked_at, lock_token) "
                  "VALUES ($1, 'POST', '{}', '/rides', 'ride_created', $2, now(), $3) RETURNING id",
                  key, user, kLock)[0][0]
                .as<std::int64_t>();
  return tx
      .exec_params(
          "INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id, "
          "created_at) VALUES ($1, $2::numeric, $3::numeric, -$2::numeric, -$3::numeric, $4, $5) RETURNING id",
          *key_id, lat, lon, user, created_at)[0][0]
      .as<std::int64_t>();
}

// What the C++ writes for the ride, read as every ride query reads it, with `charge` as its charge id.
std::string cpp_body(pqxx::work& tx, std::int64_t ride_id, const std::string& charge) {
  auto row = tx.exec_params("SELECT " RR_RIDE_VIEW_COLUMNS " FROM rides WHERE id = $1", ride_id)[0];
  rr::rides::RideView view;
  view.id = row[0].as<std::int64_t>();
  view.origin_lat = row[1].as<std::string>();
  view.origin_lon = row[2].as<std::string>();
  view.target_lat = row[3].as<std::string>();
  view.target_lon = row[4].as<std::string>();
  view.stripe_charge_id = charge;  // not charged yet: the charge id the finish would set
  view.created_at = row[6].as<std::string>();
  return rr::rides::ride_created_body(view);
}

std::string sql_body(pqxx::work& tx, std::int64_t ride_id, const std::string& charge) {
  return tx
      .exec_params(
          "SELECT rides_created_body_v1(id, origin_lat, origin_lon, target_lat, target_lon, $2, created_at) "
          "FROM rides WHERE id = $1",
          ride_id, charge)[0][0]
      .as<std::string>();
}

std::int64_t ride_id_of(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str());
  BOOST_REQUIRE_MESSAGE(doc.IsObject() && doc.HasMember("ride"), body);
  return doc["ride"]["id"].GetInt64();
}

struct RenderFixture {
  rr::test::TestDatabase db;
  std::int64_t user = 0;
  RenderFixture() {
    user = std::stoll(
        db.scalar("INSERT INTO users (email, stripe_customer_id) VALUES ('render@example.com', 'cus_r') RETURNING id"));
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(stored_201_rendering, RenderFixture)

BOOST_AUTO_TEST_CASE(the_sql_rendering_is_ride_created_body_to_the_byte) {
  struct Case {
    const char *lat, *lon, *created_at, *charge;
  };
  const Case cases[] = {
      {"37.7749", "-122.4194", "2026-01-02 03:04:05.000007+00", "ch_3PbenchAbCdEfGhIjKlMnOpQr"},
      {"90", "-180", "2026-12-31 23:59:59.999999+00", "ch_bounds"},
      {"-90", "180", "2026-06-01 00:00:00+00", "ch_zero_micros"},
      {"-0.0000000001", "0.1234567891", "2026-03-04 05:06:07.1+05:30", "ch_tiny"},
      {"12.3456789012", "-179.9999999999", "2026-03-04 05:06:07.123456-08", "ch_many_digits"},
      {"0", "0", "2026-01-01 00:00:00.5+00", "ch_\"quoted\"\\back/slash\x01\x08\t\n\x0b\x0c\r\x1f\x7f caf\xc3\xa9"},
      {"1", "2", "2026-01-01 00:00:00+00", ""},
  };
  pqxx::work tx(db.conn());
  int n = 0;
  for (const auto& c : cases) {
    std::int64_t key_id = 0;
    auto ride = key_with_ride(tx, user, "render-key-" + std::to_string(n++) + "-000000000000", c.lat, c.lon,
                              c.created_at, &key_id);
    auto expected = cpp_body(tx, ride, c.charge);
    BOOST_TEST(sql_body(tx, ride, c.charge) == expected, c.lat << " " << c.lon << " " << c.created_at);
    // The same under a session whose float output rounds: a reader's session may not be the
    // finishing one's, and the function pins the setting.
    tx.exec("SET LOCAL extra_float_digits = -3");
    BOOST_TEST(sql_body(tx, ride, c.charge) == expected, c.lat << " with extra_float_digits -3");
    tx.exec("SET LOCAL extra_float_digits = 1");
  }
  // The escaping is RapidJSON's: control characters other than \b\t\n\f\r as upper-case \u00XX.
  std::int64_t key_id = 0;
  auto ride = key_with_ride(tx, user, "render-key-escape-0000000000", "1", "1", "2026-01-01 00:00:00+00", &key_id);
  BOOST_TEST(sql_body(tx, ride, "a\x0b\x1f").find("\"stripe_charge_id\":\"a\\u000B\\u001F\"") != std::string::npos);
}

// The finish compares, the readers render: a body that is the rendering is stored as NULL and read
// back as the same bytes by both key-reading functions; any other body is stored as given.
BOOST_AUTO_TEST_CASE(the_finish_stores_null_only_for_the_rendering_and_the_readers_render_it_back) {
  std::int64_t same_key = 0, other_key = 0;
  std::string same_body, other_body;
  {
    pqxx::work tx(db.conn());
    auto same = key_with_ride(tx, user, "finish-same-key-000000000", "37.7749", "-122.4194",
                              "2026-01-02 03:04:05.000007+00", &same_key);
    auto other = key_with_ride(tx, user, "finish-other-key-00000000", "37.7749", "-122.4194",
                               "2026-01-02 03:04:05.000007+00", &other_key);
    same_body = cpp_body(tx, same, "ch_same");
    // The shape of a 201 that is not this ride's rendering (another charge id in it).
    other_body = cpp_body(tx, other, "ch_not_the_charge");
    for (auto [key_id, charge, body] :
         {std::tuple{same_key, "ch_same", same_body}, std::tuple{other_key, "ch_other", other_body}}) {
      tx.exec_params("SELECT rides_record_charge_and_finish($1, $2, $3, 2000, 'usd', $4, 201, $5)", key_id, kLock,
                     charge, user, body);
    }
    tx.commit();
  }
  BOOST_TEST(db.scalar("SELECT (response_body IS NULL) || ' ' || response_code || ' ' || recovery_point || ' ' || "
                       "(lock_token IS NULL) || ' ' || response_renderer FROM idempotency_keys WHERE id = " +
                       std::to_string(same_key)) == "true 201 finished true 1");
  BOOST_TEST(db.scalar("SELECT response_body FROM idempotency_keys WHERE id = " + std::to_string(other_key)) ==
             other_body);
  // A body stored as given names no renderer: nothing renders it.
  BOOST_TEST(db.scalar("SELECT response_renderer IS NULL FROM idempotency_keys WHERE id = " +
                       std::to_string(other_key)) == "t");
  BOOST_TEST(db.scalar("SELECT stripe_charge_id FROM rides WHERE idempotency_key_id = " + std::to_string(same_key)) ==
             "ch_same");
  for (auto [key, body] :
       {std::pair{"finish-same-key-000000000", same_body}, std::pair{"finish-other-key-00000000", other_body}}) {
    auto args = std::string("(") + std::to_string(user) + ", '" + key + "', 'POST', '/rides', '{}', '127.0.0.1', " +
                "gen_random_uuid(), 30";
    BOOST_TEST(db.scalar("SELECT response_body FROM idem_find_or_create" + args + ")") == body, key);
    BOOST_TEST(db.scalar("SELECT response_body FROM idem_find_or_create_at" + args + ", 'started')") == body, key);
    BOOST_TEST(db.scalar("SELECT response_body FROM rides_create_with_key" + args + ", 1, 2, 3, 4, 'pk')") == body,
               key);
  }
  // A finished key of another code still needs its body.
  BOOST_CHECK_THROW(db.scalar("UPDATE idempotency_keys SET response_code = 402, response_body = NULL WHERE id = " +
                              std::to_string(other_key) + " RETURNING 1"),
                    pqxx::check_violation);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(stored_201_over_the_api, RideFixture)

BOOST_AUTO_TEST_CASE(a_new_key_stores_no_body_and_replays_its_201_from_the_database) {
  const std::string form = "origin_lat=-33.8688197&origin_lon=151.2092955&target_lat=-90&target_lon=-180";
  auto key = new_key();
  auto first = post_ride(key, form);
  BOOST_REQUIRE_MESSAGE(first.status == 201, first.body);
  BOOST_TEST(db.scalar("SELECT (response_body IS NULL) || ' ' || response_code FROM idempotency_keys") == "true 201");
  // Another API process: nothing in its memory, the replay comes from the database.
  rr::api::App other(settings(5));
  auto replay = other.handle(ride_request(key, form, "application/x-www-form-urlencoded", std::nullopt));
  BOOST_TEST(replay.status == 201);
  BOOST_TEST(replay.body == first.body);
  BOOST_TEST(response_header(replay, "Idempotent-Replayed").value_or("") == "true");
  BOOST_TEST(stripe.charges() == 1);
  BOOST_TEST(count("rides") == "1");
}

BOOST_AUTO_TEST_CASE(a_cancelled_ride_still_replays_its_original_201) {
  auto key = new_key();
  auto first = post_ride(key);
  BOOST_REQUIRE_MESSAGE(first.status == 201, first.body);
  auto cancelled = cancel_ride(std::to_string(ride_id_of(first.body)), new_key());
  BOOST_REQUIRE_MESSAGE(cancelled.status == 200, cancelled.body);
  BOOST_TEST(db.scalar("SELECT (cancelled_at IS NOT NULL) || ' ' || (stripe_refund_id IS NOT NULL) FROM rides") ==
             "true true");
  rr::api::App other(settings(5));
  auto replay = other.handle(ride_request(key, kDefaultForm, "application/x-www-form-urlencoded", std::nullopt));
  BOOST_TEST(replay.status == 201);
  BOOST_TEST(replay.body == first.body);
  BOOST_TEST(replay.body.find("\"cancelled_at\":null,\"stripe_refund_id\":null") != std::string::npos, replay.body);
}

BOOST_AUTO_TEST_SUITE_END()
