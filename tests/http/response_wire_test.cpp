// The one-buffer response writer against Beast's serializer: the same bytes for every response
// the handlers make (statuses, extra headers, keep-alive or close, HEAD), and Beast's path for
// what it leaves to Beast.
#include <boost/beast/core/ostream.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/test/unit_test.hpp>
#include <sstream>

#include "common/http/beast_response.hpp"
#include "common/http/response_wire.hpp"

namespace http = rr::http;

namespace {

std::string beast_bytes(const http::Response& response, bool keep_alive, bool head) {
  std::ostringstream out;
  out << http::beast_response(response, keep_alive, head);
  return out.str();
}

std::optional<std::string> wire_bytes(const http::Response& response, bool keep_alive, bool head) {
  std::string out = "kept";  // appended to, never replaced
  if (!http::append_wire_response(out, response, keep_alive, head)) {
    BOOST_TEST(out == "kept");
    return std::nullopt;
  }
  BOOST_TEST(out.starts_with("kept"));
  return out.substr(4);
}

http::Response response(int status, std::string body, http::Headers headers = {},
                        std::string content_type = "application/json") {
  http::Response out;
  out.status = status;
  out.body = std::move(body);
  out.headers = std::move(headers);
  out.content_type = std::move(content_type);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(response_wire)

BOOST_AUTO_TEST_CASE(the_handlers_answers_are_byte_for_byte_what_beast_writes) {
  const std::string ride = R"({"message":"Ride created and charged.","ride":{"id":1}})";
  const std::vector<http::Response> answers = {
      response(201, ride,
               {{"Idempotent-Replayed", "true"},
                {"Idempotency-Key", "a-key-of-twenty-chars"},
                {"X-Request-Id", "6f1c1f7e-9d5c-4a39-8f57-1b0a5e4f3c2d"}}),
      response(200, R"({"status":"ok"})"),
      response(200, "", {}, ""),
      response(400, R"({"error":{}})", {{"Accept-Encoding", "identity"}}),
      response(402, "{}"),
      response(404, "{}"),
      response(405, "{}", {{"Allow", "GET, HEAD"}}),
      response(409, "{}"),
      response(413, "{}"),
      response(415, "{}", {{"Accept-Encoding", "identity"}}),
      response(422, "{}"),
      response(429, "{}", {{"Retry-After", "1"}}),
      response(431, "{}"),
      response(500, "{}"),
      response(503, "{}", {{"Retry-After", "1"}, {"X-Request-Id", "trace-me-42"}}),
      response(200, "# HELP x\n", {}, "text/plain; version=0.0.4"),
      response(200, std::string(100000, 'x')),
      response(201, "{}", {{"x-lower-case", "v a l u e"}, {"X-Empty", ""}, {"X-Tab", "a\tb"}}),
  };
  for (const auto& answer : answers) {
    for (bool keep_alive : {true, false}) {
      for (bool head : {false, true}) {
        auto wire = wire_bytes(answer, keep_alive, head);
        BOOST_REQUIRE_MESSAGE(wire, answer.status << " went to Beast");
        BOOST_TEST(*wire == beast_bytes(answer, keep_alive, head),
                   answer.status << " keep_alive=" << keep_alive << " head=" << head);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_replay_is_one_buffer_with_the_fields_in_beasts_order) {
  auto wire = wire_bytes(response(201, "{}", {{"Idempotent-Replayed", "true"}, {"X-Request-Id", "r1"}}), false, false);
  BOOST_REQUIRE(wire);
  BOOST_TEST(*wire ==
             "HTTP/1.1 201 Created\r\nServer: rocket-rides\r\nContent-Type: application/json\r\n"
             "Idempotent-Replayed: true\r\nX-Request-Id: r1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}");
}

BOOST_AUTO_TEST_CASE(what_beast_frames_or_rewrites_is_left_to_beast) {
  // No body and no Content-Length by definition, or no reason phrase.
  for (int status : {100, 204, 304, 299, 1000, 42}) BOOST_TEST(!wire_bytes(response(status, ""), true, false));
  // Fields Beast sets itself, in any case.
  for (const char* name : {"Connection", "content-length", "Transfer-Encoding", "SERVER", "Content-Type"}) {
    BOOST_TEST(!wire_bytes(response(200, "{}", {{name, "x"}}), true, false), name);
  }
  // Names that are not tokens, values with line breaks, controls or edge whitespace.
  for (const http::Headers& headers : std::vector<http::Headers>{{{"", "x"}},
                                                                 {{"Bad Name", "x"}},
                                                                 {{"X-Split", "a\r\nInjected: yes"}},
                                                                 {{"X-Nul", std::string("a\0b", 3)}},
                                                                 {{"X-Edge", " padded"}},
                                                                 {{"X-Edge", "padded\t"}}}) {
    BOOST_TEST(!wire_bytes(response(200, "{}", headers), true, false));
  }
  BOOST_TEST(!wire_bytes(response(200, "{}", {}, "text/plain\r\nX: y"), true, false));
}

BOOST_AUTO_TEST_CASE(beasts_path_still_drops_a_header_with_a_line_break) {
  auto bytes = beast_bytes(response(200, "{}", {{"X-Split", "a\r\nInjected: yes"}, {"X-Kept", "1"}}), true, false);
  BOOST_TEST(bytes.find("Injected") == std::string::npos, bytes);
  BOOST_TEST(bytes.find("X-Kept: 1\r\n") != std::string::npos, bytes);
}

BOOST_AUTO_TEST_SUITE_END()
