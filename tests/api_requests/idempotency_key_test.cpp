// The Idempotency-Key reader without a socket or a database: the sf-string grammar (RFC 8941)
// decides what a quoted key says, then the key's own bounds (20 to 255 printable ASCII characters,
// not blank, no comma) apply to the text it says, never to the quoted form on the wire.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "common/api_requests/api_error.hpp"
#include "common/api_requests/request_parsing.hpp"
#include "common/http/structured_string.hpp"

using rr::api::ApiError;
using rr::http::parse_sf_string;
using rr::http::serialize_sf_string;

namespace {

rr::http::Request with_key(const std::string& value) {
  rr::http::Request request;
  request.headers = {{"Idempotency-Key", value}};
  return request;
}

std::string key_of(const std::string& value) { return rr::api::parse_idempotency_key(with_key(value)); }

// The refusal's message, or "accepted" when the key was read.
std::string refusal_of(const std::string& value) {
  try {
    rr::api::parse_idempotency_key(with_key(value));
    return "accepted";
  } catch (const ApiError& e) {
    BOOST_TEST(e.status == 400);
    return e.what();
  }
}

bool mentions(const std::string& message, const std::string& part) { return message.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(idempotency_key)

BOOST_AUTO_TEST_CASE(the_grammar_undoes_only_the_two_escapes_and_refuses_the_rest) {
  BOOST_TEST(parse_sf_string(R"("a \"b\" \\ c")").value() == R"(a "b" \ c)");
  BOOST_TEST(parse_sf_string(R"(  "spaced"  )").value() == "spaced");  // the field's own spaces
  BOOST_TEST(parse_sf_string(R"("")").value().empty());
  for (const std::string& bad :
       std::vector<std::string>{R"("\x")", R"("\,")", R"("ends in \")", R"("abrupt \)", R"("unclosed)", R"(noquote")",
                                R"("a"b")", R"("a";p=1)", R"("a", "b")", std::string("\"tab\tin\""),
                                std::string("\"caf\xc3\xa9\""), std::string("\"del\x7f\""), std::string("\"nul\0\"", 6),
                                std::string("'single'"), std::string("\t\"tab-led\"")}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(!parse_sf_string(bad)); }
  }
}

BOOST_AUTO_TEST_CASE(what_is_written_reads_back_and_what_cannot_be_carried_is_not_written) {
  BOOST_TEST(serialize_sf_string(R"(a "b" \ c)").value() == R"("a \"b\" \\ c")");
  BOOST_TEST(parse_sf_string(serialize_sf_string(R"(\"\\")").value()).value() == R"(\"\\")");
  for (const std::string& bad :
       std::vector<std::string>{std::string("tab\t"), std::string("caf\xc3\xa9"), std::string("del\x7f"),
                                std::string("nul\0", 4), std::string("line\n")}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(!serialize_sf_string(bad)); }
  }
}

BOOST_AUTO_TEST_CASE(the_length_bounds_count_the_key_not_its_quoted_form) {
  // 20 characters of key in 26 on the wire: three escaped quotes.
  std::string twenty = R"(\"\"\"key-of-17-chars-x)";
  BOOST_TEST(key_of("\"" + twenty + "\"").size() == 20);
  // 19 characters of key in 21 on the wire: a quoted form longer than 20 is still too short.
  BOOST_TEST(mentions(refusal_of("\"" + std::string(19, 'k') + "\""), "(got 19)"));
  BOOST_TEST(mentions(refusal_of("\"" + std::string(17, 'k') + R"(\\\\)" + "\""), "(got 19)"));
  // 255 characters of key in 387 on the wire: accepted, though the wire is longer than 255.
  std::string escaped_255;
  for (int i = 0; i < 130; ++i) escaped_255 += R"(\\)";
  escaped_255 += std::string(125, 'z');
  BOOST_TEST(key_of("\"" + escaped_255 + "\"").size() == 255);
  BOOST_TEST(mentions(refusal_of("\"" + escaped_255 + "z\""), "(got 256)"));
  // The same bounds bare.
  BOOST_TEST(key_of(std::string(20, 'k')) == std::string(20, 'k'));
  BOOST_TEST(key_of(std::string(255, 'k')) == std::string(255, 'k'));
  BOOST_TEST(mentions(refusal_of(std::string(19, 'k')), "(got 19)"));
  BOOST_TEST(mentions(refusal_of(std::string(256, 'k')), "(got 256)"));
}

BOOST_AUTO_TEST_CASE(a_quoted_key_is_the_same_key_as_its_bare_text) {
  std::string key = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
  BOOST_TEST(key_of("\"" + key + "\"") == key_of(key));
  BOOST_TEST(key_of(serialize_sf_string(key).value()) == key);
}

BOOST_AUTO_TEST_CASE(valid_strings_the_key_bounds_refuse_name_the_bound) {
  // Valid sf-strings all: blank, a comma (a list after a proxy joined two headers), too short.
  BOOST_TEST(mentions(refusal_of(R"("")"), "must not be blank"));
  BOOST_TEST(mentions(refusal_of("\"" + std::string(30, ' ') + "\""), "must not be blank"));
  BOOST_TEST(mentions(refusal_of(R"("key-one-0000000000000,key-two-0000000000000")"), "comma-separated list"));
  BOOST_TEST(mentions(refusal_of(R"("short")"), "(got 5)"));
}

BOOST_AUTO_TEST_CASE(invalid_strings_are_refused_as_strings_whatever_their_length) {
  std::string body(30, 'k');
  for (const std::string& bad :
       std::vector<std::string>{"\"" + body + R"(\x")", "\"" + body + R"(\")", "\"" + body + R"(" , ")" + body + "\"",
                                "\"" + body + "\"" + body + "\"", "\"" + body + "\xc3\xa9\"", "\"" + body + "\t\""}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(mentions(refusal_of(bad), "not an RFC 8941 string")); }
  }
  // Outside quotes the same bytes are a bare key's, refused by the key's own rule.
  BOOST_TEST(mentions(refusal_of(body + "\xc3\xa9"), "printable ASCII"));
}

BOOST_AUTO_TEST_CASE(a_missing_or_repeated_header_is_refused_before_any_grammar) {
  rr::http::Request none;
  BOOST_CHECK_THROW(rr::api::parse_idempotency_key(none), ApiError);
  rr::http::Request twice;
  twice.headers = {{"Idempotency-Key", std::string(30, 'a')}, {"idempotency-key", std::string(30, 'a')}};
  BOOST_CHECK_THROW(rr::api::parse_idempotency_key(twice), ApiError);
}

BOOST_AUTO_TEST_SUITE_END()
