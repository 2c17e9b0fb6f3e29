// Checks of a request's head, made before its body is read, for what Beast's parser accepts but a
// hostile client could use: framing two parsers would read differently (request smuggling, RFC
// 9112 section 6.3), a missing or doubled Host, expectations and content codings we do not serve.
// Plain strings in, a verdict out: no Beast here, so the rules are testable and readable alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http/message.hpp"

namespace rr::http {

// A request's head as the checks read it: its version and its parsed headers, referred to, not
// copied.
struct RequestHead {
  unsigned version = 11;  // 10 for HTTP/1.0, 11 for HTTP/1.1
  const Headers& fields;
  bool folded_field = false;  // a field continued on a line of its own (obs-fold)
};

// Why a request is refused before its body is read. The connection is always closed after the
// answer: the unread body, or bytes whose framing we do not trust, must never be read as the
// next request.
struct HeadRejection {
  int status = 400;
  std::string message;
  Headers headers;  // extra response headers, e.g. Accept-Encoding with a 415
};

// nullopt when the request may go on to its body and its handler.
std::optional<HeadRejection> check_request_head(const RequestHead& head);

// What a chunked body's trailer held. Its fields are never read as headers (RequestParser drops
// them), but its lines obey the header's framing rules.
struct RequestTrailer {
  std::size_t fields = 0;
  bool folded_field = false;
};

// nullopt when the request, its body read, may go on to its handler.
std::optional<HeadRejection> check_request_trailer(const RequestTrailer& trailer);

}  // namespace rr::http
