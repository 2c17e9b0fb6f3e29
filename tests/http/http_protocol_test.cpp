// Hostile HTTP/1.1 over real sockets against the real rocket-rides-api process: request
// smuggling shapes (RFC 9112 section 6.3), Host, Expect, Content-Encoding, HEAD, and what such
// requests leave in the access log. Every rejection is one JSON error answer, never a 5xx, never a
// database row, and the bytes after a request with untrustworthy framing are never answered.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/auth/users.hpp"
#include "support/api_process.hpp"
#include "support/process.hpp"
#include "support/raw_connection.hpp"
#include "support/ride_fixture.hpp"
#include "support/test_database.hpp"

using namespace rr::test;
namespace data = boost::unit_test::data;

namespace {

// One API process (with its database and stand-in provider) for the whole suite: no test here
// creates a ride, and each finds its own access lines by a request id of its own.
struct SuiteApi {
  TestDatabase db;
  StripeMock stripe;
  std::string token = rr::auth::create_user(db.conn(), "mallory@example.com", "cus_mallory").token;
  ApiProcess process{db, stripe};
  std::uint16_t port = process.port();

  static inline SuiteApi* current = nullptr;

  SuiteApi() { current = this; }
  ~SuiteApi() { current = nullptr; }
};

SuiteApi& api() { return *SuiteApi::current; }

// Headers that would make POST /rides create a ride if its body were ever read as one.
std::string authenticated_post_head() {
  return "POST /rides HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api().token +
         "\r\nIdempotency-Key: " + new_key() + "\r\nContent-Type: application/x-www-form-urlencoded\r\n";
}

const std::string& kForm = RideFixture::kDefaultForm;
const std::string kPipelinedHealthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

// Exactly one answer with this status and a JSON error object, then the server closes the
// connection: nothing after the answer is ever read as another request.
void expect_one_error_then_close(RawConnection& connection, int status) {
  std::string answer = connection.read_response();
  BOOST_TEST(status_of(answer) == status, answer);
  BOOST_TEST(header_of(answer, "Content-Type") == "application/json");
  BOOST_TEST(body_of(answer).starts_with(R"({"error":{"type":"invalid_request_error","message":")"), answer);
  BOOST_TEST(connection.closed_by_peer());
  BOOST_TEST(connection.unread().empty(), "a second answer: " << connection.unread());
}

void expect_no_rows() {
  BOOST_TEST(api().db.scalar("SELECT count(*) FROM idempotency_keys") == "0");
  BOOST_TEST(api().db.scalar("SELECT count(*) FROM rides") == "0");
}

// The access line of the request that sent this X-Request-Id.
std::string access_line(const std::string& request_id) {
  std::string needle = "request_id=" + request_id + " ";
  BOOST_REQUIRE(api().process.wait_for_output(needle, std::chrono::seconds(3)));
  auto logs = api().process.output();
  auto at = logs.find(needle);
  auto start = logs.rfind('\n', at) + 1;
  return logs.substr(start, logs.find('\n', at) - start);
}

const std::vector<std::string> kNotFinallyChunked = {"gzip",          "xchunked", "\"chunked\"",
                                                     "chunked, gzip", "identity", ""};

// A chunked body holding `body` in one chunk, then the trailer `trailer` (fields, each ending in
// CRLF) and the blank line that ends the message.
std::string chunked(const std::string& body, const std::string& trailer) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx", body.size());
  return std::string(size) + "\r\n" + body + "\r\n0\r\n" + trailer + "\r\n";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http_protocol, *boost::unit_test::fixture<SuiteApi>())

BOOST_DATA_TEST_CASE(a_transfer_encoding_not_ending_in_chunked_is_400_and_its_body_is_never_a_request,
                     data::make(kNotFinallyChunked), coding) {
  RawConnection connection(api().port);
  connection.send(authenticated_post_head() + "Transfer-Encoding: " + coding + "\r\n\r\n" + kPipelinedHealthz);
  expect_one_error_then_close(connection, 400);
  expect_no_rows();
}

BOOST_AUTO_TEST_CASE(a_transfer_encoding_listed_over_two_fields_counts_its_last_coding) {
  RawConnection connection(api().port);
  connection.send(authenticated_post_head() + "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n" +
                  kPipelinedHealthz);
  expect_one_error_then_close(connection, 400);
  expect_no_rows();
}

BOOST_AUTO_TEST_CASE(a_transfer_encoding_name_a_proxy_might_read_differently_is_400) {
  // Whitespace before the colon (RFC 9112 section 5.1 requires 400) and a bare LF line end.
  for (std::string field : {"Transfer-Encoding : chunked\r\n", "Transfer-Encoding:\tgzip\n"}) {
    BOOST_TEST_CONTEXT(field) {
      RawConnection connection(api().port);
      connection.send(authenticated_post_head() + field + "\r\n0\r\n\r\n" + kPipelinedHealthz);
      expect_one_error_then_close(connection, 400);
    }
  }
  expect_no_rows();
}

BOOST_AUTO_TEST_CASE(transfer_encoding_with_content_length_is_400_and_closes_in_either_order) {
  for (std::string coding : {"gzip", "identity", "chunked, gzip", "chunked"}) {
    for (bool length_first : {false, true}) {
      BOOST_TEST_CONTEXT("Transfer-Encoding: " << coding << (length_first ? " after" : " before")
                                               << " Content-Length") {
        std::string length = "Content-Length: " + std::to_string(kForm.size()) + "\r\n";
        std::string encoding = "Transfer-Encoding: " + coding + "\r\n";
        RawConnection connection(api().port);
        connection.send(authenticated_post_head() + (length_first ? length + encoding : encoding + length) + "\r\n" +
                        kForm + kPipelinedHealthz);
        expect_one_error_then_close(connection, 400);
      }
    }
  }
  expect_no_rows();
}

BOOST_AUTO_TEST_CASE(http_1_0_with_transfer_encoding_is_answered_once_and_closed) {
  RawConnection connection(api().port);
  // Keep-alive asked for explicitly: an HTTP/1.0 connection would otherwise close anyway.
  connection.send(
      "POST /rides HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\n" +
      kPipelinedHealthz);
  expect_one_error_then_close(connection, 400);
}

BOOST_AUTO_TEST_CASE(http_1_1_without_host_is_400_and_http_1_0_without_host_is_served) {
  {
    RawConnection connection(api().port);
    connection.send("GET /healthz HTTP/1.1\r\n\r\n");
    expect_one_error_then_close(connection, 400);
  }
  RawConnection old(api().port);
  old.send("GET /healthz HTTP/1.0\r\n\r\n");
  BOOST_TEST(status_of(old.read_response()) == 200);
}

BOOST_AUTO_TEST_CASE(two_hosts_are_400) {
  for (std::string hosts : {"Host: a\r\nHost: b\r\n", "Host: a\r\nHost: a\r\n", "Host: a, b\r\n"}) {
    BOOST_TEST_CONTEXT(hosts) {
      RawConnection connection(api().port);
      connection.send("GET /healthz HTTP/1.1\r\n" + hosts + "\r\n");
      expect_one_error_then_close(connection, 400);
    }
  }
}

// RFC 9112 section 5.2: a proxy that keeps the continuation line apart would read a different
// field, or a Host of its own, from the one Beast joins.
BOOST_AUTO_TEST_CASE(a_field_folded_over_lines_is_400) {
  for (std::string fields : {"X-Note: a\r\n b\r\n", "X-Note: a\r\n\tb\r\n", "X-Note:\r\n b\r\n",
                             "Authorization: Bearer\r\n x\r\n", "X-Note: a\r\n  \r\n"}) {
    BOOST_TEST_CONTEXT(fields) {
      RawConnection connection(api().port);
      connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n" + fields + "\r\n" + kPipelinedHealthz);
      expect_one_error_then_close(connection, 400);
    }
  }
  // Spaces inside one line are not a fold.
  RawConnection connection(api().port);
  connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Note: a  \t b \r\n\r\n");
  BOOST_TEST(status_of(connection.read_response()) == 200);
}

BOOST_AUTO_TEST_CASE(an_expectation_other_than_100_continue_is_417) {
  for (std::string expectation : {"foo", "100-continue, foo", "200-ok"}) {
    BOOST_TEST_CONTEXT(expectation) {
      RawConnection connection(api().port);
      connection.send(authenticated_post_head() + "Expect: " + expectation +
                      "\r\nContent-Length: " + std::to_string(kForm.size()) + "\r\n\r\n" + kForm);
      expect_one_error_then_close(connection, 417);
    }
  }
  expect_no_rows();
}

BOOST_AUTO_TEST_CASE(a_body_in_a_content_encoding_the_api_does_not_decode_is_415) {
  for (std::string coding : {"gzip", "br", "deflate, identity"}) {
    BOOST_TEST_CONTEXT(coding) {
      RawConnection connection(api().port);
      connection.send(authenticated_post_head() + "Content-Encoding: " + coding +
                      "\r\nContent-Length: " + std::to_string(kForm.size()) + "\r\n\r\n" + kForm);
      std::string answer = connection.read_response();
      BOOST_TEST(status_of(answer) == 415, answer);
      BOOST_TEST(header_of(answer, "Accept-Encoding") == "identity");
      BOOST_TEST(body_of(answer).starts_with(R"({"error":{"type":"invalid_request_error","message":")"));
    }
  }
  expect_no_rows();
  // identity is no encoding at all: the request goes on (here to the token check).
  RawConnection connection(api().port);
  connection.send("POST /rides HTTP/1.1\r\nHost: x\r\nContent-Encoding: identity\r\nContent-Length: " +
                  std::to_string(kForm.size()) + "\r\n\r\n" + kForm);
  BOOST_TEST(status_of(connection.read_response()) == 401);
}

BOOST_AUTO_TEST_CASE(head_answers_like_get_without_the_body) {
  for (std::string target : {"/healthz", "/rides", "/rides?limit=1"}) {
    BOOST_TEST_CONTEXT(target) {
      // The same request id in both, so the heads can be compared byte for byte.
      std::string rest = " " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api().token +
                         "\r\nX-Request-Id: head-vs-get\r\n\r\n";
      RawConnection connection(api().port);
      connection.send("GET" + rest);
      std::string get = connection.read_response();
      BOOST_TEST(status_of(get) == 200, get);
      BOOST_TEST(!body_of(get).empty());
      connection.send("HEAD" + rest);
      std::string head = connection.read_head();
      BOOST_TEST(head == get.substr(0, get.size() - body_of(get).size()));
      // No body bytes follow the head: the next answer on the connection starts right after it.
      connection.send("GET" + rest);
      BOOST_TEST(connection.read_response() == get);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_4000_byte_method_and_path_are_cut_in_the_access_log) {
  RawConnection long_method(api().port);
  long_method.send(std::string(4000, 'M') + " /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: long-method\r\n\r\n");
  BOOST_TEST(status_of(long_method.read_response()) == 405);
  auto line = access_line("long-method");
  BOOST_TEST(line.size() < 1000u, line.size());
  BOOST_TEST(line.find("method=\"" + std::string(64, 'M') + "...[cut, 4000 bytes]\"") != std::string::npos, line);

  RawConnection long_path(api().port);
  long_path.send("GET /" + std::string(3999, 'p') + " HTTP/1.1\r\nHost: x\r\nX-Request-Id: long-path\r\n\r\n");
  BOOST_TEST(status_of(long_path.read_response()) == 404);
  line = access_line("long-path");
  BOOST_TEST(line.size() < 1000u, line.size());
  BOOST_TEST(line.find("path=\"/" + std::string(511, 'p') + "...[cut, 4000 bytes]\"") != std::string::npos, line);
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8_are_escaped_in_the_access_log) {
  RawConnection connection(api().port);
  connection.send("GET /caf\xc3\xa9/\xff\xc0\xaf HTTP/1.1\r\nHost: x\r\nX-Request-Id: not-utf8\r\n\r\n");
  BOOST_TEST(status_of(connection.read_response()) == 404);
  auto line = access_line("not-utf8");
  BOOST_TEST(line.find("path=\"/caf\xc3\xa9/\\xff\\xc0\\xaf\"") != std::string::npos, line);
}

// Fields sent after a chunked body were once merged into the headers after every framing check had
// passed: a trailer could authenticate, key and type a request that its header section did not.
BOOST_AUTO_TEST_CASE(fields_sent_only_in_a_chunked_trailer_are_never_acted_on) {
  const std::string post = "POST /rides HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n";
  const std::string auth = "Authorization: Bearer " + api().token + "\r\n";
  const std::string form_type = "Content-Type: application/x-www-form-urlencoded\r\n";
  auto key = [] { return "Idempotency-Key: " + new_key() + "\r\n"; };
  auto answer_to = [](const std::string& wire) {
    RawConnection connection(api().port);
    connection.send(wire);
    return connection.read_response();
  };

  // Authorization only in the trailer.
  BOOST_TEST(status_of(answer_to(post + key() + form_type + "\r\n" + chunked(kForm, auth))) == 401);
  // The Idempotency-Key only in the trailer.
  auto answer = answer_to(post + auth + form_type + "\r\n" + chunked(kForm, key()));
  BOOST_TEST(status_of(answer) == 400);
  BOOST_TEST(body_of(answer).find("An Idempotency-Key header is required.") != std::string::npos, answer);
  // Content-Type only in the trailer: the body is read as a form, the type when none is given.
  std::string json = R"({"origin_lat":1,"origin_lon":2,"target_lat":3,"target_lon":4})";
  BOOST_TEST(status_of(answer_to(post + auth + key() + "\r\n" + chunked(json, "Content-Type: application/json\r\n"))) ==
             422);
  expect_no_rows();

  // X-Request-Id only in the trailer names nothing in the access log, and Connection: close there
  // leaves the connection open for the next request.
  RawConnection connection(api().port);
  connection.send("POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                  chunked("x", "X-Request-Id: trailer-request-id\r\nConnection: close\r\n") +
                  "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: after-the-trailer\r\n\r\n");
  connection.read_response();
  BOOST_TEST(status_of(connection.read_response()) == 200);
  access_line("after-the-trailer");
  BOOST_TEST(api().process.output().find("request_id=trailer-request-id") == std::string::npos);
}

// A chunked request read in pieces, each parsed when it arrives: its head with its last chunk in
// one segment, then its trailer (none, or one field) and the next request one byte at a time. A
// debug build once aborted on Beast's assertion that a last chunk comes back with five bytes.
BOOST_DATA_TEST_CASE(a_chunked_request_arriving_in_pieces_is_served_and_so_is_the_next,
                     data::make(std::vector<std::string>{"", "X-Note: a\r\n"}), trailer) {
  RawConnection connection(api().port);
  connection.send_each_write_at_once();
  connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::string request_id = "arriving-in-pieces-" + std::to_string(trailer.size());
  connection.send_one_byte_at_a_time(
      trailer + "\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + request_id + "\r\n\r\n",
      std::chrono::milliseconds(1));
  BOOST_TEST(status_of(connection.read_response()) == 200);
  BOOST_TEST(status_of(connection.read_response()) == 200);
  access_line(request_id);
}

BOOST_AUTO_TEST_CASE(a_trailer_field_folded_over_lines_is_400) {
  RawConnection connection(api().port);
  connection.send(authenticated_post_head() + "Transfer-Encoding: chunked\r\n\r\n" +
                  chunked(kForm, "X-Note: a\r\n b\r\n") + kPipelinedHealthz);
  expect_one_error_then_close(connection, 400);
  expect_no_rows();
}

// Beast bounds the header section only: a trailer or a chunk's extensions that never end would
// otherwise be buffered for as long as the client keeps sending.
BOOST_AUTO_TEST_CASE(a_trailer_or_chunk_line_that_never_ends_is_431_not_buffered) {
  for (std::string start : {std::string("0\r\n"), std::string("1;ext=")}) {
    BOOST_TEST_CONTEXT(start) {
      RawConnection connection(api().port);
      connection.send(authenticated_post_head() + "Transfer-Encoding: chunked\r\n\r\n" + start);
      std::string filler = start == "0\r\n" ? "X-Filler: " + std::string(1000, 'a') + "\r\n" : std::string(1024, 'a');
      // 200 KiB, far past the 16 KiB bound; the server may close before all of it is sent.
      try {
        for (int i = 0; i < 200; ++i) connection.send(filler);
      } catch (const std::runtime_error&) {
      }
      expect_one_error_then_close(connection, 431);
    }
  }
  expect_no_rows();
}

BOOST_AUTO_TEST_SUITE_END()
