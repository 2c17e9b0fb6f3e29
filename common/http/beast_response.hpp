// A Response as Beast's message, for Beast's serializer: the general path of the response writer,
// for what response_wire.hpp leaves to Beast, and the reference its bytes are tested against.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "common/http/message.hpp"

namespace rr::http {

using BeastResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Status 500 when the status is not three digits; headers with a line break are dropped (and
// logged): a handler's data must never split the answer. `head`: Content-Length without the body.
// Throws what Beast throws for a message it cannot frame (a body on a 204, ...).
BeastResponse beast_response(Response response, bool keep_alive, bool head);

}  // namespace rr::http
