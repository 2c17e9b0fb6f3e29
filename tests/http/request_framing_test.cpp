// The request-head rules alone, without a socket: which heads go on to their body and which are
// refused with which status (tests/http/http_protocol_test.cpp shows the same over the wire).
#include "common/http/request_framing.hpp"

#include <boost/test/unit_test.hpp>
#include <optional>
#include <string>
#include <vector>

using rr::http::check_request_head;
using rr::http::Headers;
using rr::http::RequestHead;

namespace {

// A head's parts, held for the call: RequestHead only refers to its headers.
struct TestHead {
  Headers fields;
  unsigned version;
  bool folded = false;
};

TestHead head(Headers fields, unsigned version = 11) { return TestHead{std::move(fields), version}; }

std::optional<rr::http::HeadRejection> check(const TestHead& h) {
  return check_request_head(RequestHead{h.version, h.fields, h.folded});
}

// The status a head is refused with, 0 when it is accepted.
int refusal(const TestHead& h) {
  auto rejection = check(h);
  return rejection ? rejection->status : 0;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(request_framing)

BOOST_AUTO_TEST_CASE(ordinary_requests_go_on) {
  BOOST_TEST(refusal(head({{"Host", "api.example.com:5000"}})) == 0);
  BOOST_TEST(refusal(head({{"host", "[::1]:5000"}, {"Content-Length", "10"}})) == 0);
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Transfer-Encoding", "chunked"}})) == 0);
  BOOST_TEST(refusal(head({{"Host", "x"}, {"transfer-encoding", " Chunked "}})) == 0);
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Expect", "100-Continue"}, {"Content-Length", "3"}})) == 0);
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Content-Encoding", "identity"}, {"Content-Length", "3"}})) == 0);
  BOOST_TEST(refusal(head({}, 10)) == 0);  // HTTP/1.0 needs no Host
}

BOOST_AUTO_TEST_CASE(transfer_encoding_other_than_chunked_alone_is_400) {
  for (std::string coding : {"gzip", "xchunked", "\"chunked\"", "chunked, gzip", "gzip, chunked", "identity", "",
                             "chunked;ext=1", "chunked,"}) {
    BOOST_TEST(refusal(head({{"Host", "x"}, {"Transfer-Encoding", coding}})) == 400, coding);
  }
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}})) == 400);
}

BOOST_AUTO_TEST_CASE(transfer_encoding_with_content_length_or_in_http_1_0_is_400) {
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Transfer-Encoding", "gzip"}, {"Content-Length", "5"}})) == 400);
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}})) == 400);
  BOOST_TEST(refusal(head({{"Transfer-Encoding", "chunked"}}, 10)) == 400);
}

BOOST_AUTO_TEST_CASE(host_missing_in_http_1_1_doubled_or_invalid_is_400) {
  BOOST_TEST(refusal(head({})) == 400);
  BOOST_TEST(refusal(head({{"Host", "a"}, {"Host", "a"}})) == 400);
  BOOST_TEST(refusal(head({{"Host", "a"}, {"Host", "b"}}, 10)) == 400);
  BOOST_TEST(refusal(head({{"Host", "a b"}})) == 400);
  BOOST_TEST(refusal(head({{"Host", "user@evil.example"}})) == 400);
}

BOOST_AUTO_TEST_CASE(expectations_other_than_100_continue_are_417) {
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Expect", "foo"}})) == 417);
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Expect", "100-continue"}, {"Expect", "foo"}})) == 417);
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Expect", "100-continue;x=1"}})) == 417);
}

BOOST_AUTO_TEST_CASE(a_body_in_a_content_encoding_we_do_not_decode_is_415_naming_identity) {
  auto rejection = check(head({{"Host", "x"}, {"Content-Encoding", "gzip"}, {"Content-Length", "9"}}));
  BOOST_REQUIRE(rejection.has_value());
  BOOST_TEST(rejection->status == 415);
  BOOST_REQUIRE(rejection->headers.size() == 1u);
  BOOST_TEST(rejection->headers[0].first == "Accept-Encoding");
  BOOST_TEST(rejection->headers[0].second == "identity");
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Content-Encoding", "identity, br"}, {"Transfer-Encoding", "chunked"}})) ==
             415);
  // No body, nothing to decode.
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Content-Encoding", "gzip"}})) == 0);
  BOOST_TEST(refusal(head({{"Host", "x"}, {"Content-Encoding", "gzip"}, {"Content-Length", "0"}})) == 0);
}

BOOST_AUTO_TEST_CASE(a_folded_field_is_400) {
  TestHead folded{{{"Host", "x"}, {"X-Note", "a b"}}, 11, true};
  auto rejection = check(folded);
  BOOST_REQUIRE(rejection);
  BOOST_TEST(rejection->status == 400);
  BOOST_TEST(rejection->message.find("folded") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(framing_is_refused_before_anything_else) {
  // A smuggling shape is 400 whatever else the head holds: its body must not be read.
  BOOST_TEST(refusal(head({{"Transfer-Encoding", "gzip"}, {"Expect", "foo"}, {"Content-Encoding", "gzip"}})) == 400);
}

BOOST_AUTO_TEST_SUITE_END()
