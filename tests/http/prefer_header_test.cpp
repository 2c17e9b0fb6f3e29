// The Prefer header's wait preference (RFC 7240), as the API reads it for its bounded wait.
#include <boost/test/unit_test.hpp>

#include "common/http/prefer_header.hpp"

using rr::http::Headers;
using rr::http::preferred_wait_seconds;

BOOST_AUTO_TEST_CASE(a_lone_wait_gives_its_seconds) {
  BOOST_TEST(preferred_wait_seconds({{"Prefer", "wait=5"}}).value() == 5u);
  BOOST_TEST(preferred_wait_seconds({{"Prefer", "wait=0"}}).value() == 0u);
}

BOOST_AUTO_TEST_CASE(no_prefer_or_no_wait_means_no_wait) {
  BOOST_TEST(!preferred_wait_seconds({}).has_value());
  BOOST_TEST(!preferred_wait_seconds({{"Content-Type", "text/plain"}}).has_value());
  BOOST_TEST(!preferred_wait_seconds({{"Prefer", "respond-async, return=minimal"}}).has_value());
  BOOST_TEST(!preferred_wait_seconds({{"Prefer", ""}}).has_value());
  // Another header whose value mentions wait is not a preference.
  BOOST_TEST(!preferred_wait_seconds({{"X-Prefer", "wait=5"}}).has_value());
}

BOOST_AUTO_TEST_CASE(wait_is_found_among_several_preferences_with_parameters_and_spaces) {
  BOOST_TEST(preferred_wait_seconds({{"Prefer", "respond-async, wait=7"}}).value() == 7u);
  BOOST_TEST(preferred_wait_seconds({{"Prefer", "return=minimal;foo=\"a,b;c\" ,  wait = 9 ;x=1"}}).value() == 9u);
  BOOST_TEST(preferred_wait_seconds({{"Prefer", ",,wait=3,"}}).value() == 3u);
}

BOOST_AUTO_TEST_CASE(names_and_header_names_are_case_insensitive) {
  BOOST_TEST(preferred_wait_seconds({{"prefer", "WAIT=4"}}).value() == 4u);
  BOOST_TEST(preferred_wait_seconds({{"PREFER", "Wait=2"}}).value() == 2u);
}

BOOST_AUTO_TEST_CASE(repeated_headers_are_one_list_and_the_first_wait_counts) {
  Headers headers{{"Prefer", "respond-async"}, {"Content-Type", "x"}, {"Prefer", "wait=6"}, {"Prefer", "wait=1"}};
  BOOST_TEST(preferred_wait_seconds(headers).value() == 6u);
  BOOST_TEST(preferred_wait_seconds({{"Prefer", "wait=8, wait=2"}}).value() == 8u);
  // The first instance decides even when it is unusable: no wait, not the later one.
  BOOST_TEST(!preferred_wait_seconds({{"Prefer", "wait=soon"}, {"Prefer", "wait=2"}}).has_value());
}

BOOST_AUTO_TEST_CASE(a_quoted_value_is_read_like_a_token) {
  BOOST_TEST(preferred_wait_seconds({{"Prefer", "wait=\"12\""}}).value() == 12u);
}

BOOST_AUTO_TEST_CASE(bad_values_mean_no_wait) {
  for (const char* value : {"wait", "wait=", "wait=-1", "wait=1.5", "wait=5s", "wait= ", "wait=0x10", "wait=\"\"",
                            "wait=\"5", "wait=1e3"}) {
    BOOST_TEST(!preferred_wait_seconds({{"Prefer", value}}).has_value(), value);
  }
}

BOOST_AUTO_TEST_CASE(a_huge_value_saturates_instead_of_overflowing) {
  auto seconds = preferred_wait_seconds({{"Prefer", "wait=99999999999999999999999999"}});
  BOOST_TEST(seconds.has_value());
  BOOST_TEST(*seconds >= 4294967295u);
}
