// Stored answers that are rendered rather than stored, pinned to committed bytes: fixed rides
// rendered by every renderer that can produce them (the SQL that replays them, the C++ that wrote
// them at the finish, the operator's `keys show`, and a replay over HTTP from a real API process)
// must give exactly the bytes of tests/golden/. A renderer that changes those bytes changes every
// stored key's replay; such a change is a new renderer version beside the old, never an edit.
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/db/connection_pool.hpp"
#include "common/db/migrations.hpp"
#include "common/idempotency/key_inspection.hpp"
#include "common/rides/ride_response.hpp"
#include "support/api_process.hpp"
#include "support/test_database.hpp"

using rr::test::ApiFixture;

namespace {

// One fixed ride and the key whose 201 it renders. Coordinates are as a client sends them (the
// database keeps them as numeric(13, 10) and every renderer prints them as float8).
struct GoldenRide {
  const char* name;  // the golden file: tests/golden/rides_created_v1/<name>.json
  std::int64_t id;
  const char *origin_lat, *origin_lon, *target_lat, *target_lon;
  const char* created_at;
  std::string charge;
  bool cancelled_and_refunded;  // the 201 shows the ride as it was created, whatever happened later
};

const std::vector<GoldenRide>& golden_rides() {
  static const std::vector<GoldenRide> rides{
      {"plain", 101, "37.7749", "-122.4194", "37.8044", "-122.2712", "2026-01-02 03:04:05.000007+00",
       "ch_3PbenchAbCdEfGhIjKlMnOpQr", false},
      {"bounds", 102, "90", "-180", "-90", "180", "2026-12-31 23:59:59.999999+00", "ch_bounds", false},
      {"whole_second", 103, "0", "0", "1", "-1", "2026-06-01 00:00:00+00", "ch_whole_second", false},
      {"awkward_floats", 104, "-0.0000000001", "0.1234567891", "0.1", "0.3", "2026-03-04 05:06:07.1+05:30",
       "ch_awkward", false},
      {"many_digits", 105, "12.3456789012", "-179.9999999999", "-89.9999999999", "100.0000000001",
       "2026-03-04 05:06:07.123456-08", "ch_many_digits", false},
      {"escaped_charge", 106, "1.5", "-1.5", "2.25", "-2.25", "2026-01-01 00:00:00.5+00",
       "ch_\"quoted\"\\back/slash\x01\x08\t\n\x0b\x0c\r\x1f\x7f caf\xc3\xa9", false},
      {"empty_charge", 107, "1", "2", "3", "4", "2026-01-01 00:00:00+00", "", false},
      {"cancelled_and_refunded", 108, "48.8566", "2.3522", "51.5074", "-0.1278", "2026-02-03 04:05:06.789+01",
       "ch_cancelled", true},
  };
  return rides;
}

std::string golden_bytes(const GoldenRide& ride) {
  const std::string path =
      std::string(ROCKET_RIDES_SOURCE_DIR) + "/tests/golden/rides_created_v1/" + ride.name + ".json";
  std::ifstream in(path, std::ios::binary);
  BOOST_REQUIRE_MESSAGE(in, "no golden file " << path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `actual` is the golden file's bytes, or the test fails showing both and who rendered them.
void check_golden(const std::string& actual, const GoldenRide& ride, const char* renderer) {
  const auto golden = golden_bytes(ride);
  BOOST_TEST(actual == golden, renderer << " for " << ride.name << " rendered\n  " << actual
                                        << "\nwhere tests/golden/rides_created_v1 has\n  " << golden);
}

// The client's Idempotency-Key of a golden ride's key (20 to 255 printable characters).
std::string client_key(const GoldenRide& ride) { return std::string("golden-ride-key-") + ride.name; }

// The finished key with its 201 stored as NULL and renderer 1, as the finish stores it, and its ride.
// `params` is the canonical JSON the API stores for its request (a replay must be the same request).
void insert_golden_ride(pqxx::connection& conn, std::int64_t user, const GoldenRide& ride, const std::string& params) {
  pqxx::work tx(conn);
  auto key_id = tx.exec_params(
                      "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
                      "recovery_point, response_code, response_body, response_renderer, user_id, locked_at) "
                      "VALUES ($1, 'POST', $2::jsonb, '/rides', 'finished', 201, NULL, 1, $3, NULL) RETURNING id",
                      client_key(ride), params, user)[0][0]
                    .as<std::int64_t>();
  tx.exec_params(
      "INSERT INTO rides (id, idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, stripe_charge_id, "
      "user_id, created_at) VALUES ($1, $2, $3::numeric, $4::numeric, $5::numeric, $6::numeric, $7, $8, $9)",
      ride.id, key_id, ride.origin_lat, ride.origin_lon, ride.target_lat, ride.target_lon, ride.charge, user,
      ride.created_at);
  if (ride.cancelled_and_refunded) {
    tx.exec_params(
        "UPDATE rides SET cancelled_at = created_at + interval '1 hour', stripe_refund_id = 're_golden' WHERE id = $1",
        ride.id);
  }
  tx.commit();
}

std::int64_t key_id_of(rr::test::TestDatabase& db, const GoldenRide& ride) {
  return std::stoll(db.scalar("SELECT id FROM idempotency_keys WHERE idempotency_key = '" + client_key(ride) + "'"));
}

// What the C++ writes at the finish for the ride as every ride query reads it (the 201 is
// rendered before the charge is recorded, so it names the charge the finish records).
std::string cpp_body(rr::test::TestDatabase& db, const GoldenRide& ride) {
  pqxx::work tx(db.conn());
  auto row = tx.exec_params("SELECT " RR_RIDE_VIEW_COLUMNS " FROM rides WHERE id = $1", ride.id)[0];
  rr::rides::RideView view;  // as created: not yet cancelled nor refunded
  view.id = row[0].as<std::int64_t>();
  view.origin_lat = row[1].as<std::string>();
  view.origin_lon = row[2].as<std::string>();
  view.target_lat = row[3].as<std::string>();
  view.target_lon = row[4].as<std::string>();
  view.stripe_charge_id = row[5].as<std::string>();
  view.created_at = row[6].as<std::string>();
  return rr::rides::ride_created_body(view);
}

struct GoldenFixture : ApiFixture {
  std::int64_t user = 0;
  std::string params;
  GoldenFixture() {
    user = std::stoll(db.scalar("SELECT id FROM users WHERE email = 'alice@example.com'"));
    start_api();
    // The canonical parameters of the form every golden replay sends, as the API stores them.
    auto probe = api->post_ride(token, "golden-params-probe-0000000000");
    BOOST_REQUIRE_MESSAGE(probe.status == 201, probe.body);
    params = db.scalar(
        "SELECT request_params FROM idempotency_keys WHERE idempotency_key = "
        "'golden-params-probe-0000000000'");
    for (const auto& ride : golden_rides()) insert_golden_ride(db.conn(), user, ride, params);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(stored_answer_golden, GoldenFixture)

// Renderer 1's two functions, and the dispatch every key reader renders through.
BOOST_AUTO_TEST_CASE(the_sql_renderer_writes_the_golden_bytes) {
  for (const auto& ride : golden_rides()) {
    const auto key = std::to_string(key_id_of(db, ride));
    check_golden(db.scalar("SELECT rides_created_body_v1(id, origin_lat, origin_lon, target_lat, target_lon, "
                           "stripe_charge_id, created_at) FROM rides WHERE id = " +
                           std::to_string(ride.id)),
                 ride, "rides_created_body_v1");
    check_golden(db.scalar("SELECT rides_created_answer_v1(" + key + ")"), ride, "rides_created_answer_v1");
    check_golden(db.scalar("SELECT idem_stored_answer(" + key + ", 1::smallint)"), ride, "idem_stored_answer");
  }
}

BOOST_AUTO_TEST_CASE(the_cpp_renderer_writes_the_golden_bytes) {
  for (const auto& ride : golden_rides()) check_golden(cpp_body(db, ride), ride, "rides::ride_created_body");
}

// The generic key reader, which every flow's request without a creating call goes through.
BOOST_AUTO_TEST_CASE(the_key_readers_render_the_golden_bytes) {
  for (const auto& ride : golden_rides()) {
    check_golden(db.scalar("SELECT response_body FROM idem_find_or_create_at(" + std::to_string(user) + ", '" +
                           client_key(ride) + "', 'POST', '/rides', '" + params +
                           "', '127.0.0.1', gen_random_uuid(), 30, 'started')"),
                 ride, "idem_find_or_create_at");
  }
}

BOOST_AUTO_TEST_CASE(keys_show_renders_the_golden_bytes) {
  rr::db::PooledConnection conn(db.url(), db.session_options());
  for (const auto& ride : golden_rides()) {
    auto key = rr::idempotency::find_key_by_id(conn, key_id_of(db, ride), std::chrono::seconds(30), true);
    BOOST_REQUIRE(key.has_value());
    check_golden(key->response_body.value_or(""), ride, "keys show (find_key_by_id)");
  }
}

// A real rocket-rides-api over a socket, whose memory never saw these keys: the replay is the
// database's, through the creating call POST /rides runs.
BOOST_AUTO_TEST_CASE(a_replay_over_http_sends_the_golden_bytes) {
  for (const auto& ride : golden_rides()) {
    auto replay = api->post_ride(token, client_key(ride));
    BOOST_TEST(replay.status == 201, ride.name);
    BOOST_TEST(replay.header("Idempotent-Replayed") == "true", ride.name);
    check_golden(replay.body, ride, "a replay over HTTP");
  }
  BOOST_TEST(stripe.charges() == 1);  // the probe's: no replay charged
}

// A later renderer stands beside the released one: a key replays through the renderer it names,
// so keys finished under renderer 1 keep their bytes when another renderer is registered.
BOOST_AUTO_TEST_CASE(a_replay_renders_with_the_renderer_the_key_names) {
  db.scalar(
      "CREATE FUNCTION test_later_answer_v2(p_key_id bigint) RETURNS text LANGUAGE sql STABLE "
      "AS $$ SELECT '{\"rendered_by\":2,\"key\":' || p_key_id || '}' $$; "
      "INSERT INTO stored_answer_renderers (renderer, flow, function_name) "
      "VALUES (2, 'create_ride', 'test_later_answer_v2') RETURNING 1");
  const auto& later = golden_rides().front();
  const auto later_key = std::to_string(key_id_of(db, later));
  db.scalar("UPDATE idempotency_keys SET response_renderer = 2 WHERE id = " + later_key + " RETURNING 1");
  for (const auto& ride : golden_rides()) {
    auto replay = api->post_ride(token, client_key(ride));
    BOOST_TEST(replay.status == 201, ride.name);
    if (&ride == &later)
      BOOST_TEST(replay.body == "{\"rendered_by\":2,\"key\":" + later_key + "}");
    else
      check_golden(replay.body, ride, "a replay over HTTP");
  }
}

// A key naming a renderer the database does not have is an error, never another renderer's bytes.
BOOST_AUTO_TEST_CASE(a_key_naming_an_unregistered_renderer_is_refused_not_guessed) {
  const auto& ride = golden_rides().front();
  db.scalar("UPDATE idempotency_keys SET response_renderer = 42 WHERE id = " + std::to_string(key_id_of(db, ride)) +
            " RETURNING 1");
  try {
    db.scalar("SELECT response_body FROM idem_find_or_create_at(" + std::to_string(user) + ", '" + client_key(ride) +
              "', 'POST', '/rides', '" + params + "', '127.0.0.1', gen_random_uuid(), 30, 'started')");
    BOOST_FAIL("a key naming renderer 42 was rendered");
  } catch (const pqxx::sql_error& e) {
    BOOST_TEST(e.sqlstate() == "RR004");
    BOOST_TEST(std::string(e.what()).find("renderer 42, which is not registered") != std::string::npos, e.what());
  }
  auto replay = api->post_ride(token, client_key(ride));
  BOOST_TEST(replay.status == 500);
  BOOST_TEST(replay.body.find("Ride created") == std::string::npos, replay.body);
}

// Code older than versioned renderers names none (a finishing function replaced by the same
// `migrate` a moment after sql/019, an older binary's reconciliation during a rolling upgrade):
// its NULL bodies are renderer 1's, and read as such.
BOOST_AUTO_TEST_CASE(a_null_body_from_code_that_names_no_renderer_replays_as_renderer_1) {
  const auto& ride = golden_rides().front();
  const auto key = std::to_string(key_id_of(db, ride));
  db.scalar("UPDATE rides SET idempotency_key_id = NULL WHERE idempotency_key_id = " + key + " RETURNING 1");
  db.scalar("DELETE FROM idempotency_keys WHERE id = " + key + " RETURNING 1");
  auto old_key = db.scalar(
      "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, recovery_point, "
      "response_code, response_body, user_id, locked_at) VALUES ('" +
      client_key(ride) + "', 'POST', '" + params + "'::jsonb, '/rides', 'finished', 201, NULL, " +
      std::to_string(user) + ", NULL) RETURNING id");
  db.scalar("UPDATE rides SET idempotency_key_id = " + old_key + " WHERE id = " + std::to_string(ride.id) +
            " RETURNING 1");
  BOOST_TEST(db.scalar("SELECT response_renderer FROM idempotency_keys WHERE id = " + old_key) == "1");
  check_golden(api->post_ride(token, client_key(ride)).body, ride, "a replay over HTTP");
}

// Every finished key whose body is NULL must say which renderer made it.
BOOST_AUTO_TEST_CASE(a_null_body_without_a_renderer_is_refused_by_the_table) {
  BOOST_CHECK_THROW(db.scalar("UPDATE idempotency_keys SET response_renderer = NULL WHERE id = " +
                              std::to_string(key_id_of(db, golden_rides().front())) + " RETURNING 1"),
                    pqxx::check_violation);
}

BOOST_AUTO_TEST_SUITE_END()

// Keys finished before renderers were versioned (sql/019) replay exactly as before: a database at
// schema 18 with such a key, migrated, reads renderer 1 for it and renders its golden bytes.
BOOST_AUTO_TEST_CASE(a_key_stored_before_renderers_were_versioned_replays_its_golden_bytes) {
  rr::test::TestDatabase db(false);
  std::vector<rr::db::Migration> before;
  for (const auto& migration : rr::db::embedded_migrations())
    if (migration.version < 19) before.push_back(migration);
  rr::db::migrate(db.conn(), before, std::vector<rr::db::SqlFunction>{});
  const auto& ride = golden_rides().front();
  {
    pqxx::work tx(db.conn());
    auto user = tx.exec(
                      "INSERT INTO users (email, stripe_customer_id) VALUES ('old@example.com', 'cus_o') "
                      "RETURNING id")[0][0]
                    .as<std::int64_t>();
    auto key_id = tx.exec_params(
                        "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, "
                        "request_path, recovery_point, response_code, response_body, user_id, locked_at) "
                        "VALUES ($1, 'POST', '{}', '/rides', 'finished', 201, NULL, $2, NULL) RETURNING id",
                        client_key(ride), user)[0][0]
                      .as<std::int64_t>();
    tx.exec_params(
        "INSERT INTO rides (id, idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, "
        "stripe_charge_id, user_id, created_at) "
        "VALUES ($1, $2, $3::numeric, $4::numeric, $5::numeric, $6::numeric, $7, $8, $9)",
        ride.id, key_id, ride.origin_lat, ride.origin_lon, ride.target_lat, ride.target_lon, ride.charge, user,
        ride.created_at);
    tx.commit();
  }
  auto report = rr::db::migrate(db.conn(), rr::db::embedded_migrations());
  BOOST_TEST(report.applied.front() == 19);
  BOOST_TEST(db.scalar("SELECT response_renderer FROM idempotency_keys") == "1");
  BOOST_TEST(db.scalar("SELECT response_body FROM idem_find_or_create_at((SELECT id FROM users), '" + client_key(ride) +
                       "', 'POST', '/rides', '{}', '', gen_random_uuid(), 30, 'started')") == golden_bytes(ride));
}
