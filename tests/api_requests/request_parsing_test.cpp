// The parsing rules against hostile clients through App::handle (the function the HTTP server calls) against real
// PostgreSQL: blank and listed Idempotency-Keys, invalid UTF-8 and repeated keys in JSON, one
// number rule for form and JSON, repeated query parameters. Every rejection is a JSON error
// with a 4xx status and writes nothing.
#include <boost/test/unit_test.hpp>

#include "support/ride_fixture.hpp"

using rr::test::new_key;
using rr::test::RideFixture;

namespace {

const std::string kJson = "application/json";
const std::string kForm = "application/x-www-form-urlencoded";

void expect_nothing_written(RideFixture& f) {
  BOOST_TEST(f.count("idempotency_keys") == "0");
  BOOST_TEST(f.count("rides") == "0");
  BOOST_TEST(f.count("staged_jobs") == "0");
}

// A JSON error object with this type and a message.
bool is_error(const rr::http::Response& r, const std::string& type = "invalid_request_error") {
  return r.content_type == "application/json" && r.body.starts_with("{\"error\":{") &&
         r.body.find("\"type\":\"" + type + "\"") != std::string::npos &&
         r.body.find("\"message\":\"") != std::string::npos;
}

// Each body, POSTed as JSON under a key of its own, is a 400 JSON error, and none wrote a row.
void expect_json_bodies_refused(RideFixture& f, const std::vector<std::string>& bodies) {
  for (const auto& body : bodies) {
    auto r = f.post_ride(new_key(), body, kJson);
    BOOST_TEST(r.status == 400, body << " -> " << r.body);
    BOOST_TEST(is_error(r), r.body);
  }
  expect_nothing_written(f);
}

// A JSON body with origin_lat spelled as given and valid other coordinates.
std::string json_with_origin_lat(const std::string& origin_lat) {
  return "{\"origin_lat\":" + origin_lat + ",\"origin_lon\":-122.4194,\"target_lat\":37.8044,\"target_lon\":-122.2712}";
}

std::string form_with_origin_lat(const std::string& origin_lat) {
  return "origin_lat=" + origin_lat + "&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712";
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(request_parsing, RideFixture)

BOOST_AUTO_TEST_CASE(blank_idempotency_keys_are_400_bare_or_quoted) {
  for (const std::string& key :
       {std::string(""), std::string(" "), std::string(30, ' '), std::string("\t \t"), std::string(25, '\t'),
        std::string("\"\""), std::string("\"  \""), "\"" + std::string(30, ' ') + "\"", std::string("\"\t\t\t\"")}) {
    auto r = post_ride(key);
    BOOST_TEST(r.status == 400, "[" << key << "] -> " << r.body);
    BOOST_TEST(is_error(r), r.body);
  }
  expect_nothing_written(*this);
}

BOOST_AUTO_TEST_CASE(a_comma_separated_list_in_one_idempotency_key_is_400) {
  auto a = new_key(), b = new_key();
  // What proxies make of two headers (RFC 9110 section 5.3), bare and quoted.
  for (const std::string& value : {a + "," + b, a + ", " + b, a + " ,  " + b, "\"" + a + "\",\"" + b + "\"",
                                   "\"" + a + "\", \"" + b + "\"", a + ",", "," + a, "\"" + a + "," + b + "\""}) {
    auto r = post_ride(value);
    BOOST_TEST(r.status == 400, value << " -> " << r.body);
    BOOST_TEST(is_error(r), r.body);
  }
  expect_nothing_written(*this);
  // The parts alone are good keys.
  BOOST_TEST(post_ride(a).status == 201);
}

BOOST_AUTO_TEST_CASE(invalid_utf8_anywhere_in_a_json_body_is_400) {
  const std::string good = json_with_origin_lat("37.7749");
  const std::vector<std::string> bodies = {
      "{\"origin_lat\":37.7749,\"origin_lon\":-122.4194,\"target_lat\":37.8044,\"target_lon\":-122.2712,"
      "\"note\":\"\xff\"}",                                           // a bad byte in an unused value
      "{\"n\xc3\":1," + good.substr(1),                               // in a key, truncated sequence
      "{\"note\":\"\xed\xa0\x80\"," + good.substr(1),                 // an encoded surrogate
      "{\"note\":\"\xc0\xaf\"," + good.substr(1),                     // overlong
      "{\"note\":\"\\udc00\"," + good.substr(1),                      // a lone low surrogate escape
      "{\"note\":[\"ok\",{\"deep\":\"\\udfff\"}]," + good.substr(1),  // nested
      good + "\xff",                                                  // after the value
      "\xef\xbb" + good,                                              // a truncated BOM
  };
  expect_json_bodies_refused(*this, bodies);
  // Valid UTF-8 and escaped pairs are fine.
  BOOST_TEST(post_ride(new_key(), "{\"note\":\"caf\xc3\xa9 \\ud83d\\ude80\"," + good.substr(1), kJson).status == 201);
}

BOOST_AUTO_TEST_CASE(duplicate_json_keys_are_400) {
  const std::vector<std::string> bodies = {
      "{\"origin_lat\":1,\"origin_lat\":2,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1}",
      "{\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1,\"x\":1,\"x\":1}",
      "{\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1,\"x\":{\"y\":1,\"y\":2}}",
      "{\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1,\"x\":[{\"y\":1,\"y\":1}]}",
      // The same key through an escape is the same key.
      "{\"origin_lat\":1,\"origin_\\u006cat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1}",
  };
  expect_json_bodies_refused(*this, bodies);
  BOOST_TEST(post_ride(new_key(),
                       "{\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1,\"x\":{"
                       "\"origin_lat\":2}}",
                       kJson)
                 .status == 201);
}

BOOST_AUTO_TEST_CASE(a_byte_order_mark_or_a_nul_in_a_json_key_or_string_is_400) {
  const std::string valid = json_with_origin_lat("37.7749");
  const std::vector<std::string> bodies = {
      "\xEF\xBB\xBF" + valid,
      "{\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1,\"note\":\"a\\u0000b\"}",
      "{\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1,\"x\\u0000\":1}",
      // A key that is a known key up to the NUL: a C string reader would take it for origin_lat.
      "{\"origin_lat\\u0000\":1,\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1}",
      "{\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1,\"x\":[\"\\u0000\"]}",
  };
  expect_json_bodies_refused(*this, bodies);
  // A BOM elsewhere than at the start is ordinary text.
  BOOST_TEST(
      post_ride(new_key(),
                "{\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1,\"note\":\"\xEF\xBB\xBF\"}",
                kJson)
          .status == 201);
}

BOOST_AUTO_TEST_CASE(json_numbers_and_form_numbers_follow_one_rule) {
  // Refused in both: exponents (however small or large), hex, infinities, too long.
  for (const std::string& number :
       {std::string("1e-400"), std::string("1e400"), std::string("3.7e1"), std::string("1E2"), std::string("0e0"),
        std::string("-0.0e-5"), std::string(400, '1'), "0." + std::string(80, '0') + "1"}) {
    auto json = post_ride(new_key(), json_with_origin_lat(number), kJson);
    auto form = post_ride(new_key(), form_with_origin_lat(number));
    BOOST_TEST(json.status == 422, number << " as JSON -> " << json.body);
    BOOST_TEST(form.status == 422, number << " as form -> " << form.body);
    BOOST_TEST(is_error(json), json.body);
    BOOST_TEST(is_error(form), form.body);
  }
  expect_nothing_written(*this);
  // Accepted in both, as the same parameters: the second is a replay of the first.
  for (const std::string& number : {std::string("37.7749"), std::string("-0"), std::string("12")}) {
    auto key = new_key();
    auto form = post_ride(key, form_with_origin_lat(number));
    auto json = post_ride(key, json_with_origin_lat(number), kJson);
    BOOST_TEST(form.status == 201, number << " -> " << form.body);
    BOOST_TEST(json.status == 201, number << " -> " << json.body);
    BOOST_TEST(json.body == form.body);
  }
}

// RapidJSON takes a NUL for the end of its input: a valid object, a NUL and anything at all was
// once read as the object alone, answered 201 and charged, while a proxy, a log or another parser
// reads the whole body. The body is read to its end: anything after the value but whitespace is 400.
BOOST_AUTO_TEST_CASE(a_nul_byte_anywhere_in_a_json_body_is_400_and_the_body_is_read_to_its_end) {
  using namespace std::string_literals;
  const std::string valid = json_with_origin_lat("37.7749");
  const std::vector<std::string> bodies = {
      valid + "\0{{{not json"s,  // what the probe sent
      valid + "\0"s,
      valid + "\0"s + json_with_origin_lat("1"),  // a second request behind the NUL
      valid + " \r\n\0 "s,
      "\0"s + valid,
      " \0"s + valid,
      "{\"origin_lat\":37.7749\0,\"origin_lon\":-122.4194,\"target_lat\":37.8044,\"target_lon\":-122.2712}"s,
      "{\"origin_lat\":\"37.7749\0\",\"origin_lon\":-122.4194,\"target_lat\":37.8044,\"target_lon\":-122.2712}"s,
      "{\"origin_lat\":1,\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1,\"note\":\"a\0b\"}"s,
      valid + "x",  // trailing garbage without a NUL, refused before too
  };
  expect_json_bodies_refused(*this, bodies);
  auto r = post_ride(new_key(), valid + "\0{{{not json"s, kJson);
  BOOST_TEST(r.body.find("NUL") != std::string::npos, r.body);
  // Whitespace around the object is JSON's own.
  BOOST_TEST(post_ride(new_key(), " \t\r\n" + valid + " \t\r\n", kJson).status == 201);
}

// [-+]digits[.digits]: a point needs digits on both sides (JSON numbers have them by JSON's grammar).
BOOST_AUTO_TEST_CASE(a_coordinate_without_digits_on_both_sides_of_its_point_is_422) {
  for (std::string number : {"1.", ".5", "+.5", "-.5"}) {
    auto form_text = number.starts_with('+') ? "%2B" + number.substr(1) : number;
    auto form = post_ride(new_key(), form_with_origin_lat(form_text));
    auto json = post_ride(new_key(), json_with_origin_lat("\"" + number + "\""), kJson);
    BOOST_TEST(form.status == 422, number << " as form -> " << form.body);
    BOOST_TEST(json.status == 422, number << " as JSON string -> " << json.body);
    BOOST_TEST(is_error(form), form.body);
    BOOST_TEST(is_error(json), json.body);
  }
  expect_nothing_written(*this);
  BOOST_TEST(post_ride(new_key(), form_with_origin_lat("%2B1.0")).status == 201);
  BOOST_TEST(post_ride(new_key(), json_with_origin_lat("\"-0.5\""), kJson).status == 201);
}

BOOST_AUTO_TEST_CASE(a_repeated_limit_or_cursor_is_400_and_a_repeated_form_field_stays_422) {
  BOOST_REQUIRE(post_ride(new_key()).status == 201);
  BOOST_REQUIRE(post_ride(new_key()).status == 201);
  for (const char* target : {"/rides?limit=1&limit=1", "/rides?limit=1&limit=2", "/rides?cursor=2&cursor=2",
                             "/rides?cursor=2&limit=1&cursor=3", "/rides?limit=&limit=1"}) {
    auto r = get(target);
    BOOST_TEST(r.status == 400, target << " -> " << r.body);
    BOOST_TEST(is_error(r), r.body);
  }
  BOOST_TEST(get("/rides?limit=1&cursor=2").status == 200);
  auto form = post_ride(new_key(), form_with_origin_lat("1") + "&origin_lat=1", kForm);
  BOOST_TEST(form.status == 422, form.body);
  BOOST_TEST(count("idempotency_keys") == "2");
}

BOOST_AUTO_TEST_CASE(a_deeply_nested_json_body_is_an_answer_not_a_crash) {
  // 64 KiB of nesting: parsed without recursion, then refused as a non-coordinate.
  std::string deep = "{\"origin_lat\":" + std::string(30000, '[') + std::string(30000, ']') +
                     ",\"origin_lon\":1,\"target_lat\":1,\"target_lon\":1}";
  auto r = post_ride(new_key(), deep, kJson);
  BOOST_TEST(r.status == 422, r.body.substr(0, 200));
  expect_nothing_written(*this);
}

BOOST_AUTO_TEST_SUITE_END()
