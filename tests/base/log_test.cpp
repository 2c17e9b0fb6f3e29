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

BOOST_AUTO_TEST_CASE(valid_utf8_is_kept_and_every_invalid_byte_is_escaped) {
  // Valid UTF-8 is text, not an attack: it stays as sent, unquoted when nothing else needs quotes.
  BOOST_TEST(rr::log::quote_value("caf\xc3\xa9") == "caf\xc3\xa9");
  BOOST_TEST(rr::log::quote_value("\xf0\x9f\x9a\x95") == "\xf0\x9f\x9a\x95");  // a four-byte emoji
  // A stray byte, a continuation byte alone, a cut sequence, an overlong '/', a surrogate and a
  // code point over U+10FFFF: each byte as \xNN, so the line stays valid UTF-8 and says what came.
  BOOST_TEST(rr::log::quote_value("a\xff") == "\"a\\xff\"");
  BOOST_TEST(rr::log::quote_value("\x80"
                                  "b") == "\"\\x80b\"");
  BOOST_TEST(rr::log::quote_value("\xe2\x82") == "\"\\xe2\\x82\"");
  BOOST_TEST(rr::log::quote_value("\xc0\xaf") == "\"\\xc0\\xaf\"");
  BOOST_TEST(rr::log::quote_value("\xed\xa0\x80") == "\"\\xed\\xa0\\x80\"");
  BOOST_TEST(rr::log::quote_value("\xf4\x90\x80\x80") == "\"\\xf4\\x90\\x80\\x80\"");
  // A valid sequence right after an invalid byte is still text.
  BOOST_TEST(rr::log::quote_value("\xff\xc3\xa9") == "\"\\xff\xc3\xa9\"");
  // C1 controls are valid UTF-8 but terminals act on them (U+009B is CSI): escaped too.
  BOOST_TEST(rr::log::quote_value("\xc2\x9b"
                                  "31m") ==
             "\"\\xc2\\x9b"
             "31m\"");
}

BOOST_AUTO_TEST_CASE(every_field_value_and_the_message_are_escaped) {
  rr::log::init("rocket-rides-test");
  auto line = rr::log::format_line(rr::log::Level::warn, "bad \xfe", {{"path", "/x\xff"}, {"method", "G\x80T"}});
  BOOST_TEST(line.find(R"(msg="bad \xfe" path="/x\xff" method="G\x80T")") != std::string::npos, line);
  for (unsigned char c : line) BOOST_TEST(c < 0x80);
}

BOOST_AUTO_TEST_CASE(truncated_cuts_long_values_with_a_marker_and_leaves_short_ones) {
  BOOST_TEST(rr::log::truncated("GET", 64) == "GET");
  BOOST_TEST(rr::log::truncated(std::string(64, 'a'), 64) == std::string(64, 'a'));
  BOOST_TEST(rr::log::truncated(std::string(4000, 'a'), 64) == std::string(64, 'a') + "...[cut, 4000 bytes]");
  // Never in the middle of a UTF-8 sequence: the cut backs off to where the character starts.
  BOOST_TEST(rr::log::truncated("ab\xc3\xa9"
                                "cd",
                                3) == "ab...[cut, 6 bytes]");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(enabled_follows_the_minimum_level) {
  BOOST_TEST(!rr::log::enabled(rr::log::Level::debug));  // info by default
  BOOST_TEST(rr::log::enabled(rr::log::Level::info));
  rr::log::set_min_level(rr::log::Level::warn);
  BOOST_TEST(!rr::log::enabled(rr::log::Level::info));
  BOOST_TEST(rr::log::enabled(rr::log::Level::error));
  rr::log::set_min_level(rr::log::Level::debug);
  BOOST_TEST(rr::log::enabled(rr::log::Level::debug));
  rr::log::set_min_level(rr::log::Level::info);
}
