// The server's own answers.
#include "common/http/server_answers.hpp"

#include "common/base/error_body.hpp"

namespace rr::http {

Response error_response(int status, std::string_view type, std::string_view message) {
  Response response;
  response.status = status;
  response.body = error_body(type, message);
  return response;
}

Response overloaded_response() {
  Response response = error_response(503, "api_error", "The server is busy; retry shortly.");
  response.with_header("Retry-After", "1");
  return response;
}

}  // namespace rr::http
