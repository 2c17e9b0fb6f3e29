// The answers the server writes itself rather than a handler: errors it finds in a request, a
// handler that failed, and the 503 of a full queue.
#pragma once

#include <string_view>

#include "common/http/message.hpp"

namespace rr::http {

// `status` with the JSON error object of error_body().
Response error_response(int status, std::string_view type, std::string_view message);

// What a full worker queue answers: the client should come back shortly, not wait here.
Response overloaded_response();

}  // namespace rr::http
