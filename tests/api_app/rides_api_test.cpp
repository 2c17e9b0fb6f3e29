// The POST /rides contract, row by row, through App::handle against real PostgreSQL and the
// stand-in provider: statuses, stored responses, and that rejected requests write nothing.
#include <boost/test/unit_test.hpp>

#include "common/rides/ride_params.hpp"
#include "support/ride_fixture.hpp"
#include "support/text.hpp"

using rr::test::metric_sample;
using rr::test::new_key;
using rr::test::response_header;
using rr::test::RideFixture;

namespace {

const std::string kJson = "application/json";

// Every rejected request must leave no trace in the database.
void expect_nothing_written(RideFixture& f) {
  BOOST_TEST(f.count("idempotency_keys") == "0");
  BOOST_TEST(f.count("rides") == "0");
  BOOST_TEST(f.count("staged_jobs") == "0");
}

std::string error_type(const rr::http::Response& r) {
  auto start = r.body.find("\"type\":\"");
  if (start == std::string::npos) return "";
  start += 8;
  return r.body.substr(start, r.body.find('"', start) - start);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(rides_api, RideFixture)

BOOST_AUTO_TEST_CASE(new_key_creates_a_charged_ride_and_returns_201) {
  auto r = post_ride(new_key());
  BOOST_TEST(r.status == 201, r.body);
  BOOST_TEST(r.body.find("\"message\":") != std::string::npos);
  BOOST_TEST(r.body.find("\"origin_lat\":37.7749,") != std::string::npos, r.body);
  BOOST_TEST(r.body.find("\"stripe_charge_id\":\"ch_") != std::string::npos, r.body);
  BOOST_TEST(r.body.find("\"created_at\":\"") != std::string::npos);
  BOOST_TEST(!response_header(r, "Idempotent-Replayed").has_value());
  BOOST_TEST(count("rides") == "1");
  BOOST_TEST(db.scalar("SELECT count(*) FROM rides WHERE stripe_charge_id LIKE 'ch_%'") == "1");
  BOOST_TEST(db.scalar("SELECT host(origin_ip) || ' ' || action || ' ' || resource_type FROM audit_records") ==
             "127.0.0.1 create_ride ride");
  BOOST_TEST(db.scalar("SELECT job_name || ' ' || (job_args->0->>'amount') FROM staged_jobs") ==
             "send_ride_receipt 2000");
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || response_code || ' ' || (locked_at IS NULL) FROM "
                       "idempotency_keys") == "finished 201 true");
  // The 201 is the ride's own rendering, so the key keeps no copy of it (a smaller final row
  // version; the readers render it back: stored_201_test).
  BOOST_TEST(db.scalar("SELECT response_body IS NULL FROM idempotency_keys") == "t");
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(replay_returns_the_stored_body_byte_for_byte) {
  auto key = new_key();
  auto first = post_ride(key);
  BOOST_REQUIRE(first.status == 201);
  // Differently spelled but equal parameters, as JSON this time: still the same request.
  auto replay = post_ride(key,
                          "{\"target_lon\": -122.2712, \"origin_lat\": 37.77490, \"origin_lon\": -122.4194, "
                          "\"target_lat\": 37.8044}",
                          kJson);
  BOOST_TEST(replay.status == 201);
  BOOST_TEST(replay.body == first.body);
  BOOST_TEST(response_header(replay, "Idempotent-Replayed").value_or("") == "true");
  BOOST_TEST(count("rides") == "1");
  BOOST_TEST(count("staged_jobs") == "1");
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(every_answer_about_a_key_names_the_key) {
  auto key = new_key();
  BOOST_TEST(response_header(post_ride(key), "Idempotency-Key").value_or("") == key);
  BOOST_TEST(response_header(post_ride(key), "Idempotency-Key").value_or("") == key);  // replay
  auto mismatch = post_ride(key, "origin_lat=1&origin_lon=2&target_lat=3&target_lon=4");
  BOOST_TEST(mismatch.status == 422);
  BOOST_TEST(response_header(mismatch, "Idempotency-Key").value_or("") == key);
  // A quoted Structured Field key is named as the key it means.
  BOOST_TEST(response_header(post_ride("\"" + key + "\""), "Idempotency-Key").value_or("") == key);
}

BOOST_AUTO_TEST_CASE(a_503_for_an_unreachable_database_names_the_key_too) {
  auto unreachable = settings(5);
  unreachable.database.url = "postgresql://postgres@127.0.0.1:1/nowhere";
  rr::api::App offline(unreachable);
  auto key = new_key();
  auto r = offline.handle(ride_request(key, kDefaultForm, "application/x-www-form-urlencoded", std::nullopt));
  BOOST_TEST(r.status == 503, r.body);
  BOOST_TEST(response_header(r, "Idempotency-Key").value_or("") == key);
  BOOST_TEST(response_header(r, "Retry-After").has_value());
}

BOOST_AUTO_TEST_CASE(a_replay_of_a_key_this_process_finished_is_answered_from_memory) {
  auto key = new_key();
  BOOST_TEST(!post_ride_in_memory(key).has_value());  // unknown key: a worker must take it
  auto first = post_ride(key);
  BOOST_REQUIRE(first.status == 201);
  // Only an answer from memory can still show the original body once the stored one changes.
  db.scalar("UPDATE idempotency_keys SET response_body = 'changed behind our back' RETURNING 1");
  auto replay = post_ride(key);
  BOOST_TEST(replay.status == 201);
  BOOST_TEST(replay.body == first.body);
  BOOST_TEST(response_header(replay, "Idempotent-Replayed").value_or("") == "true");
  auto in_memory = post_ride_in_memory(key);
  BOOST_REQUIRE(in_memory.has_value());
  BOOST_TEST(in_memory->status == 201);
  BOOST_TEST(in_memory->body == first.body);
  BOOST_TEST(response_header(*in_memory, "Idempotent-Replayed").value_or("") == "true");
  BOOST_TEST(response_header(*in_memory, "X-Request-Id").has_value());
  // Different parameters under the key are still refused from memory, and change nothing.
  auto mismatch = post_ride_in_memory(key, "origin_lat=1&origin_lon=2&target_lat=3&target_lon=4");
  BOOST_REQUIRE(mismatch.has_value());
  BOOST_TEST(mismatch->status == 422);
  // Invalid requests need no worker either.
  auto invalid = post_ride_in_memory("short");
  BOOST_REQUIRE(invalid.has_value());
  BOOST_TEST(invalid->status == 400);
  BOOST_TEST(count("rides") == "1");
  BOOST_TEST(stripe.charges() == 1);
}

// A retry sending the same bytes is replayed from memory without its parameters being read again
// (FinishedResponses::request_bytes); the same body under another Content-Type is another request
// and goes the whole way, as do a bad token and a bad key before any lookup.
BOOST_AUTO_TEST_CASE(only_the_same_bytes_skip_reading_the_parameters_of_a_replay) {
  auto key = new_key();
  auto first = post_ride(key);
  BOOST_REQUIRE(first.status == 201);
  auto same = app->handle_in_memory(ride_request(key, kDefaultForm, "application/x-www-form-urlencoded", std::nullopt));
  BOOST_REQUIRE(same.has_value());
  BOOST_TEST(same->status == 201);
  BOOST_TEST(same->body == first.body);
  BOOST_TEST(response_header(*same, "Idempotent-Replayed").value_or("") == "true");
  BOOST_TEST(response_header(*same, "Idempotency-Key").value_or("") == key);
  // The form's bytes read as JSON are no JSON at all: 400, as for a new key, not the replay.
  auto as_json = app->handle_in_memory(ride_request(key, kDefaultForm, kJson, std::nullopt));
  BOOST_REQUIRE(as_json.has_value());
  BOOST_TEST(as_json->status == 400, as_json->body);
  BOOST_TEST(!response_header(*as_json, "Idempotent-Replayed").has_value());
  // Equal values spelled otherwise are still the same request: replayed, by their canonical form.
  auto respelled = post_ride_in_memory(key,
                                       "target_lon=-122.2712&origin_lat=37.77490&origin_lon=-122.4194&"
                                       "target_lat=37.8044");
  BOOST_REQUIRE(respelled.has_value());
  BOOST_TEST(respelled->status == 201);
  BOOST_TEST(respelled->body == first.body);
  // Another token of the right form, which no cache holds: never a replay from memory.
  auto other_token = token;
  other_token.back() = other_token.back() == '0' ? '1' : '0';
  BOOST_TEST(!app->handle_in_memory(ride_request(key, kDefaultForm, "application/x-www-form-urlencoded", other_token))
                  .has_value());
  BOOST_TEST(post_ride(key, kDefaultForm, "application/x-www-form-urlencoded", other_token).status == 401);
  BOOST_TEST(count("rides") == "1");
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(memory_never_answers_for_another_user) {
  auto key = new_key();
  BOOST_REQUIRE(post_ride(key).status == 201);
  std::string bobs_token = add_user("bob@example.com", "cus_bob");
  auto bobs = post_ride(key, kDefaultForm, "application/x-www-form-urlencoded", bobs_token);
  BOOST_TEST(bobs.status == 201);
  BOOST_TEST(!response_header(bobs, "Idempotent-Replayed").has_value());
  BOOST_TEST(count("rides") == "2");
  BOOST_TEST(stripe.charges() == 2);
}

BOOST_AUTO_TEST_CASE(zero_and_zero_point_zero_are_the_same_parameters) {
  auto key = new_key();
  BOOST_REQUIRE(post_ride(key, "origin_lat=0&origin_lon=0&target_lat=1&target_lon=-0").status == 201);
  auto again = post_ride(key, "origin_lat=0.0&origin_lon=-0.0&target_lat=1.000&target_lon=0");
  BOOST_TEST(again.status == 201);
  BOOST_TEST(response_header(again, "Idempotent-Replayed").value_or("") == "true");
}

BOOST_AUTO_TEST_CASE(quoted_structured_field_key_is_the_same_key_as_bare) {
  auto key = new_key();
  BOOST_REQUIRE(post_ride(key).status == 201);
  auto quoted = post_ride("\"" + key + "\"");
  BOOST_TEST(quoted.status == 201);
  BOOST_TEST(response_header(quoted, "Idempotent-Replayed").value_or("") == "true");
  BOOST_TEST(count("idempotency_keys") == "1");
}

BOOST_AUTO_TEST_CASE(missing_authorization_is_401_and_creates_no_key) {
  rr::http::Request request;
  request.method = "POST";
  request.target = request.path = "/rides";
  request.headers = {{"Idempotency-Key", new_key()}, {"Content-Type", "application/x-www-form-urlencoded"}};
  request.body = kDefaultForm;
  auto r = app->handle(request);
  BOOST_TEST(r.status == 401);
  BOOST_TEST(response_header(r, "WWW-Authenticate").value_or("") == "Bearer");
  expect_nothing_written(*this);
}

BOOST_AUTO_TEST_CASE(unknown_token_is_401_and_creates_no_key) {
  BOOST_TEST(
      post_ride(new_key(), kDefaultForm, "application/x-www-form-urlencoded", "rr_" + std::string(64, 'a')).status ==
      401);
  BOOST_TEST(post_ride(new_key(), kDefaultForm, "application/x-www-form-urlencoded", "garbage").status == 401);
  expect_nothing_written(*this);
}

BOOST_AUTO_TEST_CASE(bad_idempotency_keys_are_400_and_create_no_key) {
  for (const std::string& key :
       {std::string(""), std::string(19, 'k'), std::string(256, 'k'), std::string("key-with-a-newline\n-0000000"),
        std::string("caf\xc3\xa9-key-000000000000000"), std::string("\"unterminated-escape-\\x-0000\"")}) {
    auto r = post_ride(key);
    BOOST_TEST(r.status == 400, "key of length " << key.size() << ": " << r.body);
    BOOST_TEST(error_type(r) == "invalid_request_error");
  }
  BOOST_TEST(post_ride(std::string(20, 'k')).status == 201);
  BOOST_TEST(post_ride(std::string(255, 'z')).status == 201);
  BOOST_TEST(count("idempotency_keys") == "2");
}

BOOST_AUTO_TEST_CASE(missing_idempotency_key_header_is_400) {
  rr::http::Request request;
  request.method = "POST";
  request.target = request.path = "/rides";
  request.headers = {{"Authorization", "Bearer " + token}};
  request.body = kDefaultForm;
  BOOST_TEST(app->handle(request).status == 400);
  expect_nothing_written(*this);
}

BOOST_AUTO_TEST_CASE(bad_parameters_are_422_and_create_no_key) {
  const std::vector<std::string> bodies = {
      "origin_lon=1&target_lat=1&target_lon=1",                            // missing
      "origin_lat=&origin_lon=1&target_lat=1&target_lon=1",                // empty
      "origin_lat=NaN&origin_lon=1&target_lat=1&target_lon=1",             // not finite
      "origin_lat=inf&origin_lon=1&target_lat=1&target_lon=1",             // not finite
      "origin_lat=0x1A&origin_lon=1&target_lat=1&target_lon=1",            // hex
      "origin_lat=12abc&origin_lon=1&target_lat=1&target_lon=1",           // trailing garbage
      "origin_lat=1%002&origin_lon=1&target_lat=1&target_lon=1",           // embedded NUL
      "origin_lat=90.0001&origin_lon=1&target_lat=1&target_lon=1",         // latitude out of range
      "origin_lat=1&origin_lon=-180.5&target_lat=1&target_lon=1",          // longitude out of range
      "origin_lat=1&origin_lat=2&origin_lon=1&target_lat=1&target_lon=1",  // repeated
  };
  for (const auto& body : bodies) {
    auto r = post_ride(new_key(), body);
    BOOST_TEST(r.status == 422, body << " -> " << r.body);
  }
  BOOST_TEST(post_ride(new_key(), "{\"origin_lat\":\"abc\",\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1}", kJson)
                 .status == 422);
  BOOST_TEST(
      post_ride(new_key(), "{\"origin_lat\":true,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1}", kJson).status ==
      422);
  BOOST_TEST(
      post_ride(new_key(), "{\"origin_lat\":100,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1}", kJson).status ==
      422);
  expect_nothing_written(*this);
}

BOOST_AUTO_TEST_CASE(malformed_or_non_object_json_is_400) {
  for (const char* body : {"{\"origin_lat\":", "[1,2,3]", "\"text\"", "", "{\"origin_lat\":NaN}"}) {
    auto r = post_ride(new_key(), body, kJson);
    BOOST_TEST(r.status == 400, body << " -> " << r.body);
  }
  BOOST_TEST(post_ride(new_key(), "a=1", "text/plain").status == 415);
  expect_nothing_written(*this);
}

BOOST_AUTO_TEST_CASE(same_key_with_different_parameters_is_422_and_changes_nothing) {
  auto key = new_key();
  auto first = post_ride(key);
  BOOST_REQUIRE(first.status == 201);
  auto r = post_ride(key, "origin_lat=1&origin_lon=2&target_lat=3&target_lon=4");
  BOOST_TEST(r.status == 422);
  BOOST_TEST(error_type(r) == "idempotency_error");
  BOOST_TEST(db.scalar("SELECT response_code || ' ' || (response_body IS NULL) FROM idempotency_keys") == "201 true");
  BOOST_TEST(post_ride(key).body == first.body);
  BOOST_TEST(stripe.charges() == 1);
}

BOOST_AUTO_TEST_CASE(two_users_may_use_the_same_key_value) {
  auto bob = add_user("bob@example.com", "cus_bob");
  auto key = new_key();
  auto a = post_ride(key);
  auto b = post_ride(key, kDefaultForm, "application/x-www-form-urlencoded", bob);
  BOOST_TEST(a.status == 201);
  BOOST_TEST(b.status == 201);
  BOOST_TEST(!response_header(b, "Idempotent-Replayed").has_value());
  BOOST_TEST(a.body != b.body);
  BOOST_TEST(count("rides") == "2");
  BOOST_TEST(stripe.charges() == 2);
}

BOOST_AUTO_TEST_CASE(declined_card_is_a_stored_final_402) {
  auto declined = add_user("poor@example.com", "cus_declined_card");
  auto key = new_key();
  auto r = post_ride(key, kDefaultForm, "application/x-www-form-urlencoded", declined);
  BOOST_TEST(r.status == 402, r.body);
  BOOST_TEST(error_type(r) == "card_error");
  BOOST_TEST(db.scalar("SELECT recovery_point || ' ' || response_code FROM idempotency_keys") == "finished 402");
  auto replay = post_ride(key, kDefaultForm, "application/x-www-form-urlencoded", declined);
  BOOST_TEST(replay.status == 402);
  BOOST_TEST(replay.body == r.body);
  BOOST_TEST(response_header(replay, "Idempotent-Replayed").value_or("") == "true");
  BOOST_TEST(count("staged_jobs") == "0");
}

BOOST_AUTO_TEST_CASE(key_in_flight_is_409_with_retry_after) {
  auto key = new_key();
  {
    pqxx::work tx(db.conn());
    tx.exec_params(
        "INSERT INTO idempotency_keys (idempotency_key, request_method, request_params, request_path, "
        "recovery_point, user_id, locked_at, lock_token) VALUES ($1, 'POST', $2::jsonb, '/rides', 'started', $3, "
        "now(), gen_random_uuid())",
        key, rr::rides::to_json({37.7749, -122.4194, 37.8044, -122.2712}), user_id);
    tx.commit();
  }
  auto r = post_ride(key);
  BOOST_TEST(r.status == 409);
  BOOST_TEST(response_header(r, "Retry-After").has_value());
  BOOST_TEST(count("rides") == "0");
  BOOST_TEST(stripe.charges() == 0);
}

BOOST_AUTO_TEST_CASE(get_ride_returns_own_rides_and_404_for_others) {
  auto created = post_ride(new_key());
  BOOST_REQUIRE(created.status == 201);
  auto id = db.scalar("SELECT id FROM rides");
  auto mine = get("/rides/" + id);
  BOOST_TEST(mine.status == 200);
  BOOST_TEST(mine.body.find("\"id\":" + id) != std::string::npos);
  // The 201 renders the ride the key's creation returned, before the charge was stored: it must be
  // the ride as GET reads it afterwards, byte for byte.
  auto ride_of = [](const std::string& body) { return body.substr(body.find("\"ride\":")); };
  BOOST_TEST(ride_of(created.body) == ride_of(mine.body));
  auto bob = add_user("bob@example.com", "cus_bob");
  BOOST_TEST(get("/rides/" + id, bob).status == 404);
  BOOST_TEST(get("/rides/999999").status == 404);
  BOOST_TEST(get("/rides/abc").status == 404);
  BOOST_TEST(get("/rides/" + id, "rr_" + std::string(64, 'b')).status == 401);
}

BOOST_AUTO_TEST_CASE(list_rides_pages_newest_first_with_a_cursor) {
  for (int i = 0; i < 3; ++i) BOOST_REQUIRE(post_ride(new_key()).status == 201);
  auto bob = add_user("bob@example.com", "cus_bob");
  BOOST_REQUIRE(post_ride(new_key(), kDefaultForm, "application/x-www-form-urlencoded", bob).status == 201);
  auto first = get("/rides?limit=2");
  BOOST_TEST(first.status == 200);
  BOOST_TEST(first.body.find("\"id\":3") < first.body.find("\"id\":2"));
  BOOST_TEST(first.body.find("\"id\":1,") == std::string::npos);
  BOOST_TEST(first.body.find("\"next_cursor\":\"2\"") != std::string::npos, first.body);
  auto second = get("/rides?limit=2&cursor=2");
  BOOST_TEST(second.body.find("\"id\":1,") != std::string::npos);
  BOOST_TEST(second.body.find("\"next_cursor\":null") != std::string::npos);
  BOOST_TEST(get("/rides", bob).body.find("\"id\":4") != std::string::npos);
  BOOST_TEST(get("/rides", bob).body.find("\"id\":3") == std::string::npos);
  BOOST_TEST(get("/rides?limit=0").status == 400);
  BOOST_TEST(get("/rides?limit=abc").status == 400);
}

BOOST_AUTO_TEST_CASE(unknown_routes_and_methods_are_404_and_405) {
  BOOST_TEST(get("/nope").status == 404);
  rr::http::Request request;
  request.method = "DELETE";
  request.target = request.path = "/rides";
  auto r = app->handle(request);
  BOOST_TEST(r.status == 405);
  BOOST_TEST(response_header(r, "Allow").value_or("") == "GET, POST");
  BOOST_TEST(get("/healthz").status == 200);
  BOOST_TEST(get("/readyz").status == 200);
}

BOOST_AUTO_TEST_CASE(request_id_is_echoed_or_generated) {
  rr::http::Request request;
  request.method = "GET";
  request.target = request.path = "/healthz";
  request.headers = {{"X-Request-Id", "req-abc-123"}};
  BOOST_TEST(response_header(app->handle(request), "X-Request-Id").value_or("") == "req-abc-123");
  request.headers.clear();
  BOOST_TEST(response_header(app->handle(request), "X-Request-Id").value_or("").size() == 36u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(metrics_endpoint)

namespace {
// Every non-comment line is `name{labels} value` with a parsable number.
bool parses_as_prometheus_text(const std::string& page) {
  std::size_t start = 0;
  while (start < page.size()) {
    auto end = page.find('\n', start);
    auto line = page.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    auto space = line.rfind(' ');
    if (space == std::string::npos) return false;
    auto value = line.substr(space + 1);
    if (value != "+Inf") {
      std::size_t used = 0;
      std::stod(value, &used);
      if (used != value.size()) return false;
    }
  }
  return true;
}
}  // namespace

// The page METRICS_PORT serves (api/serve.cpp); the public port answers /metrics with a 404.
BOOST_FIXTURE_TEST_CASE(metrics_parse_and_move_with_traffic, RideFixture) {
  const std::string created = "rocket_rides_http_requests_total{method=\"POST\",route=\"/rides\",status=\"201\"}";
  auto before = app->metrics_page();
  BOOST_TEST(before.status == 200);
  BOOST_TEST(before.content_type.starts_with("text/plain"));
  BOOST_TEST(parses_as_prometheus_text(before.body));
  double created_before = std::max(0.0, metric_sample(before.body, created));
  double replays_before = std::max(0.0, metric_sample(before.body, "rocket_rides_replays_total"));
  auto key = new_key();
  BOOST_REQUIRE(post_ride(key).status == 201);
  BOOST_REQUIRE(post_ride(key).status == 201);
  auto after = app->metrics_page();
  BOOST_TEST(parses_as_prometheus_text(after.body));
  BOOST_TEST(metric_sample(after.body, created) == created_before + 2);
  BOOST_TEST(metric_sample(after.body, "rocket_rides_replays_total") == replays_before + 1);
  BOOST_TEST(metric_sample(after.body, "rocket_rides_provider_calls_total{outcome=\"charged\"}") >= 1);
  BOOST_TEST(after.body.find("rocket_rides_http_request_duration_seconds_bucket{route=\"/rides\",le=\"+Inf\"}") !=
             std::string::npos);
  BOOST_TEST(metric_sample(after.body, "rocket_rides_db_pool_connections{state=\"max\"}") == 24);
}

BOOST_FIXTURE_TEST_CASE(metrics_are_not_served_on_the_public_routes, RideFixture) {
  for (const char* method : {"GET", "HEAD", "POST"}) {
    rr::http::Request request;
    request.method = method;
    request.target = request.path = "/metrics";
    auto r = app->handle(request);
    BOOST_TEST(r.status == 404, method << ": " << r.body);
    BOOST_TEST(r.body.find("rocket_rides_") == std::string::npos);
    BOOST_TEST(error_type(r) == "invalid_request_error");
  }
}

BOOST_AUTO_TEST_SUITE_END()
