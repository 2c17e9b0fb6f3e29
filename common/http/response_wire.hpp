// A Response as the bytes of its HTTP/1.1 answer, built in one buffer that goes out in one write:
// the bytes Beast's serializer writes for the same response (tests/http/response_wire_test.cpp
// compares them), without Beast's field list and buffer sequences per answer. Covers what the
// handlers answer; a response that needs Beast's rules (a status without a body, headers Beast
// sets or rewrites itself, values it would reject) is left to Beast.
#pragma once

#include <string>

#include "common/http/message.hpp"

namespace rr::http {

// The text the server puts in every answer's Server header.
inline constexpr std::string_view kServerName = "rocket-rides";

// Appends the answer's bytes to `out` and returns true; or returns false, `out` untouched, when
// the response must go through Beast. `head`: the answer to a HEAD request (its Content-Length,
// no body). `keep_alive` false adds "Connection: close".
bool append_wire_response(std::string& out, const Response& response, bool keep_alive, bool head);

}  // namespace rr::http
