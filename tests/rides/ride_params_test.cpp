// Canonical ride parameters (common/rides/ride_params.hpp): the text to_json writes, read back
// as doubles or, for a new key's call, as the very digits it holds; and the one rule a client's
// coordinates meet first (parse_ride_params), in every encoding, without a socket or a database.
#include <boost/test/unit_test.hpp>
#include <random>
#include <string>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/rides/ride_params.hpp"

using rr::rides::canonical_coordinates;
using rr::rides::RideParams;
using rr::rides::to_json;

BOOST_AUTO_TEST_SUITE(ride_params)

BOOST_AUTO_TEST_CASE(canonical_coordinates_are_the_digits_to_json_wrote) {
  for (RideParams params : {RideParams{37.7749, -122.4194, 37.8044, -122.2712}, RideParams{0, -0.0, 90, -180},
                            RideParams{1e-7, -1.5e-300, 0.1, 179.99999999999997}}) {
    auto json = to_json(params);
    auto texts = canonical_coordinates(json);
    BOOST_REQUIRE_MESSAGE(texts.has_value(), json);
    BOOST_TEST((*texts)[0] == rr::rides::format_coordinate(params.origin_lat));
    BOOST_TEST((*texts)[1] == rr::rides::format_coordinate(params.origin_lon));
    BOOST_TEST((*texts)[2] == rr::rides::format_coordinate(params.target_lat));
    BOOST_TEST((*texts)[3] == rr::rides::format_coordinate(params.target_lon));
  }
  const auto json = to_json({37.7749, -122.4194, 37.8044, -122.2712});  // the views point into it
  BOOST_TEST((*canonical_coordinates(json))[1] == "-122.4194");
}

BOOST_AUTO_TEST_CASE(any_other_text_is_not_canonical) {
  for (std::string json : {"", "{}", R"({"origin_lat": 1,"origin_lon":2,"target_lat":3,"target_lon":4})",
                           R"({"origin_lon":2,"origin_lat":1,"target_lat":3,"target_lon":4})",
                           R"({"origin_lat":1,"origin_lon":2,"target_lat":3})",
                           R"({"origin_lat":1,"origin_lon":2,"target_lat":3,"target_lon":4,"x":5})",
                           R"({"origin_lat":"1","origin_lon":2,"target_lat":3,"target_lon":4})",
                           R"({"origin_lat":1,"origin_lon":2,"target_lat":3,"target_lon":})",
                           R"({"origin_lat":1,"origin_lon":2,"target_lat":3,"target_lon":4} )"}) {
    BOOST_TEST(!canonical_coordinates(json).has_value(), json);
  }
}

// A resumed key's ride is created from its stored request_params (create_ride_phase): reading them
// back must give the very doubles that were stored, or the ride row would hold other digits than
// the key. Shortest round-trip texts with many digits are where a fast, inexact parse goes wrong.
BOOST_AUTO_TEST_CASE(stored_params_read_back_as_the_same_doubles) {
  std::mt19937_64 random(14);
  std::uniform_real_distribution<double> latitude(-90, 90), longitude(-180, 180);
  int differing = 0;
  for (int i = 0; i < 20000; ++i) {
    RideParams params{latitude(random), longitude(random), latitude(random), longitude(random)};
    auto read = rr::rides::from_json(to_json(params));
    BOOST_REQUIRE(read.has_value());
    if (read->origin_lat != params.origin_lat || read->origin_lon != params.origin_lon ||
        read->target_lat != params.target_lat || read->target_lon != params.target_lon) {
      ++differing;
    }
  }
  BOOST_TEST(differing == 0);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

rr::http::Request ride_request(const std::string& body, const std::string& content_type) {
  rr::http::Request request;
  request.method = "POST";
  request.target = request.path = "/rides";
  request.headers = {{"Content-Type", content_type}};
  request.body = body;
  return request;
}

// The status parse_ride_params answers for this body: 0 when it is accepted, with origin_lat's
// value in `read`.
int status_of(const std::string& body, const std::string& content_type, double* read = nullptr) {
  try {
    auto params = rr::api::parse_ride_params(ride_request(body, content_type));
    if (read) *read = params.origin_lat;
    return 0;
  } catch (const rr::api::ApiError& error) {
    return error.status;
  }
}

// A form's '+' is a space: a sign is sent as %2B.
std::string as_form(const std::string& origin_lat) {
  std::string encoded = origin_lat.starts_with('+') ? "%2B" + origin_lat.substr(1) : origin_lat;
  return "origin_lat=" + encoded + "&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712";
}
std::string as_json_string(const std::string& origin_lat) {
  return "{\"origin_lat\":\"" + origin_lat +
         "\",\"origin_lon\":-122.4194,\"target_lat\":37.8044,\"target_lon\":-122.2712}";
}
std::string as_json_number(const std::string& origin_lat) {
  return "{\"origin_lat\":" + origin_lat + ",\"origin_lon\":-122.4194,\"target_lat\":37.8044,\"target_lon\":-122.2712}";
}

const std::string kForm = "application/x-www-form-urlencoded";
const std::string kJson = "application/json";

}  // namespace

BOOST_AUTO_TEST_SUITE(coordinate_rule)

// [-+]digits[.digits]: a point needs digits on both sides. The first four are what a hostile
// probe found accepted; JSON's own grammar already refuses them as numbers (400, malformed).
BOOST_AUTO_TEST_CASE(a_point_without_digits_on_both_sides_is_422_as_a_form_field_or_json_string) {
  for (std::string text :
       {"1.", ".5", "+.5", "-.5", "-1.", "+1.", "0.", ".0", ".", "+.", "-.", "+", "-", "1..5", "1.5.", "++1", "+-1"}) {
    BOOST_TEST(status_of(as_form(text), kForm) == 422, "form " << text);
    BOOST_TEST(status_of(as_json_string(text), kJson) == 422, "JSON string " << text);
  }
  for (std::string text : {"1.", ".5", "+.5", "-.5", "+1"}) {
    BOOST_TEST(status_of(as_json_number(text), kJson) == 400, "JSON number " << text);
  }
}

BOOST_AUTO_TEST_CASE(no_exponent_hex_infinity_nan_or_space_in_any_encoding) {
  for (std::string text : {"1e1", "1E1", "1e-1", "1.5e0", "0x1A", "0X1a", "inf", "-inf", "Infinity", "nan", "NaN",
                           "1,5", "1_0", "\xd9\xa1" /* U+0661, an Arabic-Indic one */}) {
    BOOST_TEST(status_of(as_form(text), kForm) == 422, "form " << text);
    BOOST_TEST(status_of(as_json_string(text), kJson) == 422, "JSON string " << text);
  }
  // Spaces and tabs, encoded as a form and a JSON string encode them.
  for (std::string text : {"%201", "1%20", "%2B1+", "1+", "%091", "1%0A"}) {
    BOOST_TEST(status_of("origin_lat=" + text + "&origin_lon=1&target_lat=1&target_lon=1", kForm) == 422,
               "form " << text);
  }
  for (std::string text : {" 1", "1 ", "\\t1", "1\\n", " +1.5"}) {
    BOOST_TEST(status_of(as_json_string(text), kJson) == 422, "JSON string " << text);
  }
  for (std::string text : {"1e1", "1E+1", "-0.5e-1"}) {
    BOOST_TEST(status_of(as_json_number(text), kJson) == 422, "JSON number " << text);
  }
}

BOOST_AUTO_TEST_CASE(sign_digits_point_digits_is_read_the_same_in_every_encoding) {
  for (auto [text, value] : {std::pair<std::string, double>{"1.5", 1.5},
                             {"-1.5", -1.5},
                             {"+1.5", 1.5},
                             {"0", 0.0},
                             {"-0", 0.0},
                             {"007.250", 7.25},
                             {"-89.999999", -89.999999}}) {
    double read = -1;
    BOOST_TEST(status_of(as_form(text), kForm, &read) == 0, "form " << text);
    BOOST_TEST(read == value, "form " << text);
    read = -1;
    BOOST_TEST(status_of(as_json_string(text), kJson, &read) == 0, "JSON string " << text);
    BOOST_TEST(read == value, "JSON string " << text);
    if (text.starts_with('+') || text.starts_with("00")) continue;  // not JSON numbers
    read = -1;
    BOOST_TEST(status_of(as_json_number(text), kJson, &read) == 0, "JSON number " << text);
    BOOST_TEST(read == value, "JSON number " << text);
  }
}

BOOST_AUTO_TEST_SUITE_END()
