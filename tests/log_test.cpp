// logfmt rendering: one line per event, values quoted only when they must be.
#include <boost/test/unit_test.hpp>

#include "common/base/log.hpp"

BOOST_AUTO_TEST_SUITE(logfmt)

BOOST_AUTO_TEST_CASE(line_has_timestamp_level_process_and_fields) {
  rr::log::init("rocket-rides-test");
  auto line = rr::log::format_line(rr::log::Level::info, "ride created", {{"ride_id", 42}, {"replayed", false}});
  BOOST_TEST(line.starts_with("ts="));
  BOOST_TEST(line.find(" level=info proc=rocket-rides-test msg=\"ride created\" ride_id=42 replayed=false") !=
             std::string::npos);
  BOOST_TEST(line.find('\n') == std::string::npos);
}

BOOST_AUTO_TEST_CASE(values_with_spaces_quotes_and_newlines_are_escaped) {
  BOOST_TEST(rr::log::quote_value("plain") == "plain");
  BOOST_TEST(rr::log::quote_value("") == "\"\"");
  BOOST_TEST(rr::log::quote_value("a b") == "\"a b\"");
  BOOST_TEST(rr::log::quote_value("k=v") == "\"k=v\"");
  BOOST_TEST(rr::log::quote_value("say \"hi\"\n") == "\"say \\\"hi\\\"\\n\"");
  BOOST_TEST(rr::log::quote_value(std::string("a\x01", 2)) == "\"a\\x01\"");
}

BOOST_AUTO_TEST_SUITE_END()
