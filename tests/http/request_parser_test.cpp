// RequestParser without a socket: Beast's parser writing straight into a Request, which a
// connection reuses from one request to the next.
#include "common/http/request_parser.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "common/http/parse_buffered.hpp"

using rr::http::Request;
using rr::http::RequestParser;

namespace {

struct Parsed {
  boost::system::error_code ec;
  std::unique_ptr<RequestParser> parser;
};

// Parses `wire` whole into `request`.
Parsed parse(std::string_view wire, Request& request, std::uint64_t body_limit = 1024,
             std::uint32_t header_limit = 8192) {
  Parsed parsed{{}, std::make_unique<RequestParser>(request)};
  parsed.parser->body_limit(body_limit);
  parsed.parser->header_limit(header_limit);
  boost::beast::flat_buffer buffer;
  auto space = buffer.prepare(wire.size());
  std::memcpy(space.data(), wire.data(), wire.size());
  buffer.commit(wire.size());
  bool ended = rr::http::parse_buffered(buffer, *parsed.parser, true, parsed.ec);
  if (!ended && !parsed.ec) parsed.ec = boost::beast::http::error::need_more;
  return parsed;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_request_is_written_into_the_request_part_by_part) {
  Request request;
  auto parsed = parse(
      "POST /rides?limit=5&x=y HTTP/1.1\r\nHost: api.example\r\nIdempotency-Key: key-1\r\nX-Twice: a\r\n"
      "x-twice: b\r\nContent-Length: 11\r\n\r\nhello world",
      request);
  BOOST_TEST_REQUIRE(!parsed.ec, parsed.ec.message());
  auto& parser = parsed.parser;
  BOOST_TEST(request.method == "POST");
  BOOST_TEST(request.target == "/rides?limit=5&x=y");
  BOOST_TEST(request.path == "/rides");
  BOOST_TEST(request.query == "limit=5&x=y");
  BOOST_TEST_REQUIRE(request.headers.size() == 5u);
  BOOST_TEST(request.headers[0].first == "Host");  // names as sent, in order, repeats kept
  BOOST_TEST(request.headers[2].first == "X-Twice");
  BOOST_TEST(request.headers[3].first == "x-twice");
  BOOST_TEST(request.headers[3].second == "b");
  BOOST_TEST(request.has_repeated_header("x-twice"));
  BOOST_TEST(*request.header("idempotency-key") == "key-1");
  BOOST_TEST(request.body == "hello world");
  BOOST_TEST(parser->version() == 11u);
  BOOST_TEST(parser->keep_alive());
  BOOST_TEST(!parser->head_request());
}

BOOST_AUTO_TEST_CASE(a_target_without_a_query_has_an_empty_one) {
  Request request;
  request.query = "left=over";
  BOOST_TEST_REQUIRE(!parse("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", request).ec);
  BOOST_TEST(request.path == "/healthz");
  BOOST_TEST(request.query.empty());
  BOOST_TEST(request.body.empty());
}

BOOST_AUTO_TEST_CASE(head_is_held_as_get_and_said_to_be_head) {
  Request request;
  auto parsed = parse("HEAD /rides/1 HTTP/1.1\r\nHost: x\r\n\r\n", request);
  BOOST_TEST_REQUIRE(!parsed.ec);
  BOOST_TEST(request.method == "GET");
  BOOST_TEST(parsed.parser->head_request());
}

BOOST_AUTO_TEST_CASE(a_chunked_body_arrives_joined) {
  Request request;
  BOOST_TEST_REQUIRE(!parse("POST /rides HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                            request)
                          .ec);
  BOOST_TEST(request.body == "hello world");
}

BOOST_AUTO_TEST_CASE(a_reused_request_holds_only_the_second_request_and_keeps_its_storage) {
  Request request;
  request.remote_address = "192.0.2.7";
  BOOST_TEST_REQUIRE(!parse("POST /rides HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a-long-enough-token-value\r\n"
                            "X-Extra: one\r\nContent-Length: 3\r\n\r\nabc",
                            request)
                          .ec);
  const char* token_storage = request.headers[1].second.data();
  request.admission = std::make_shared<int>(1);
  request.wait_deadline = std::chrono::steady_clock::now();

  BOOST_TEST_REQUIRE(
      !parse("GET /rides/9 HTTP/1.1\r\nHost: y\r\nAuthorization: Bearer another-token-value-here!\r\n\r\n", request)
           .ec);
  BOOST_TEST(request.method == "GET");
  BOOST_TEST(request.path == "/rides/9");
  BOOST_TEST_REQUIRE(request.headers.size() == 2u);  // the first request's third and fourth are gone
  BOOST_TEST(request.headers[0].second == "y");
  BOOST_TEST(request.headers[1].second == "Bearer another-token-value-here!");
  BOOST_TEST(request.headers[1].second.data() == token_storage);  // written over, not allocated anew
  BOOST_TEST(request.body.empty());
  BOOST_TEST(!request.admission);
  BOOST_TEST(!request.wait_deadline.has_value());
  BOOST_TEST(request.remote_address == "192.0.2.7");  // the connection's, not the parser's
}

BOOST_AUTO_TEST_CASE(a_request_moved_away_leaves_one_the_next_parse_fills_whole) {
  Request request;
  BOOST_TEST_REQUIRE(!parse("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", request).ec);
  Request taken = std::move(request);
  BOOST_TEST_REQUIRE(!parse("GET /b HTTP/1.1\r\nHost: z\r\n\r\n", request).ec);
  BOOST_TEST(request.path == "/b");
  BOOST_TEST_REQUIRE(request.headers.size() == 1u);
  BOOST_TEST(request.headers[0].second == "z");
  BOOST_TEST(taken.body == "hi");
}

BOOST_AUTO_TEST_CASE(http_1_0_and_connection_close_end_keep_alive) {
  Request request;
  auto parsed = parse("GET / HTTP/1.0\r\n\r\n", request);
  BOOST_TEST_REQUIRE(!parsed.ec);
  BOOST_TEST(parsed.parser->version() == 10u);
  BOOST_TEST(!parsed.parser->keep_alive());
  parsed = parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", request);
  BOOST_TEST_REQUIRE(!parsed.ec);
  BOOST_TEST(!parsed.parser->keep_alive());
  parsed = parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", request);
  BOOST_TEST_REQUIRE(!parsed.ec);
  BOOST_TEST(parsed.parser->keep_alive());
}

BOOST_AUTO_TEST_CASE(the_parsers_limits_still_hold) {
  Request request;
  auto ec = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n", request, 1024).ec;
  BOOST_TEST((ec == boost::beast::http::error::body_limit));
  ec = parse("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(300, 'a') + "\r\n\r\n", request, 1024, 128).ec;
  BOOST_TEST((ec == boost::beast::http::error::header_limit));
  ec = parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", request).ec;
  BOOST_TEST((ec == boost::beast::http::error::multiple_content_length));  // two lengths: a smuggling attempt
}

// A chunked body's trailer is not the header section: its fields are counted and checked, never
// added to the request's headers, or a field sent after the body would authenticate, key or
// attribute the request (RFC 9110 section 6.5).
BOOST_AUTO_TEST_CASE(trailer_fields_are_counted_and_never_become_headers) {
  Request request;
  auto parsed = parse(
      "POST /rides HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\nAuthorization: Bearer trailer-token\r\nX-Forwarded-For: 203.0.113.9\r\n"
      "Idempotency-Key: a-key-sent-only-in-the-trailer\r\n\r\n",
      request);
  BOOST_TEST_REQUIRE(!parsed.ec, parsed.ec.message());
  BOOST_TEST(request.body == "hello");
  BOOST_TEST_REQUIRE(request.headers.size() == 2u);
  BOOST_TEST(request.headers[0].first == "Host");
  BOOST_TEST(request.headers[1].first == "Transfer-Encoding");
  BOOST_TEST(!request.header("Authorization"));
  BOOST_TEST(!request.header("X-Forwarded-For"));
  BOOST_TEST(!request.header("Idempotency-Key"));
  BOOST_TEST(parsed.parser->trailer_fields() == 3u);
  BOOST_TEST(!parsed.parser->folded_trailer_field());
  BOOST_TEST(!parsed.parser->folded_field());
}

// Beast reads a trailer's Connection field into the flags behind its keep_alive(); the parser's
// answer is the header section's alone.
BOOST_AUTO_TEST_CASE(whether_the_connection_stays_open_is_read_from_the_header_section_only) {
  const std::string chunked_head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n";
  Request request;
  auto parsed = parse(chunked_head + "\r\n1\r\na\r\n0\r\nConnection: close\r\n\r\n", request);
  BOOST_TEST_REQUIRE(!parsed.ec, parsed.ec.message());
  BOOST_TEST(parsed.parser->trailer_fields() == 1u);
  BOOST_TEST(parsed.parser->keep_alive());
  parsed = parse(chunked_head + "Connection: close\r\n\r\n1\r\na\r\n0\r\n\r\n", request);
  BOOST_TEST_REQUIRE(!parsed.ec, parsed.ec.message());
  BOOST_TEST(!parsed.parser->keep_alive());
  parsed = parse("GET / HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", request);
  BOOST_TEST_REQUIRE(!parsed.ec, parsed.ec.message());
  BOOST_TEST(parsed.parser->keep_alive());
}

BOOST_AUTO_TEST_CASE(a_folded_trailer_field_is_told_apart_from_a_folded_header) {
  Request request;
  auto parsed =
      parse("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-Note: a\r\n b\r\n\r\n",
            request);
  BOOST_TEST_REQUIRE(!parsed.ec, parsed.ec.message());
  BOOST_TEST(parsed.parser->folded_trailer_field());
  BOOST_TEST(!parsed.parser->folded_field());
  BOOST_TEST(request.headers.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_trailer_is_bounded_like_a_header) {
  Request request;
  std::string head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n";
  Parsed parsed{{}, std::make_unique<RequestParser>(request)};
  parsed.parser->trailer_limit(100);
  boost::beast::flat_buffer buffer;
  std::string wire = head + "X-Big: " + std::string(200, 'a') + "\r\n\r\n";
  auto space = buffer.prepare(wire.size());
  std::memcpy(space.data(), wire.data(), wire.size());
  buffer.commit(wire.size());
  rr::http::parse_buffered(buffer, *parsed.parser, true, parsed.ec);
  BOOST_TEST((parsed.ec == boost::beast::http::error::header_limit), parsed.ec.message());
}
