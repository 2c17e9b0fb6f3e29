// Strict UTF-8 validation: the well-formed sequences of RFC 3629 and nothing else.
#include <boost/test/unit_test.hpp>

#include "common/base/utf8.hpp"

BOOST_AUTO_TEST_SUITE(utf8)

BOOST_AUTO_TEST_CASE(well_formed_text_is_valid) {
  for (const std::string& text :
       {std::string(""), std::string("plain ascii"), std::string("caf\xc3\xa9"), std::string("\xe2\x82\xac"),
        std::string("\xed\x9f\xbf"), std::string("\xee\x80\x80"), std::string("\xf0\x9f\x9a\x80"),
        std::string("\xf4\x8f\xbf\xbf"), std::string("nul \0 inside", 12)}) {
    BOOST_TEST(rr::utf8::is_valid(text), text);
  }
}

BOOST_AUTO_TEST_CASE(malformed_text_is_invalid) {
  for (const std::string& text : {
           std::string("\x80"),              // stray continuation
           std::string("\xc3"),              // truncated
           std::string("\xc3(", 2),          // bad continuation
           std::string("\xc0\xaf"),          // overlong '/'
           std::string("\xc1\xbf"),          // overlong
           std::string("\xe0\x80\xaf"),      // overlong, 3 bytes
           std::string("\xed\xa0\x80"),      // U+D800, a surrogate
           std::string("\xed\xbf\xbf"),      // U+DFFF
           std::string("\xf0\x80\x80\xaf"),  // overlong, 4 bytes
           std::string("\xf4\x90\x80\x80"),  // U+110000
           std::string("\xf5\x80\x80\x80"),  // lead past U+10FFFF
           std::string("\xff"),
           std::string("ok then \xe2\x82"),  // truncated at the end
       }) {
    BOOST_TEST(!rr::utf8::is_valid(text), text.size());
  }
}

BOOST_AUTO_TEST_SUITE_END()
