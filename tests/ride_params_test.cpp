// Canonical ride parameters (common/rides/ride_params.hpp): the text to_json writes, read back
// as doubles or, for a new key's call, as the very digits it holds.
#include <boost/test/unit_test.hpp>
#include <random>
#include <string>

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
