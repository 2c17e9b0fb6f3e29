// A text/plain response with this body: what the HTTP server's tests answer from their handlers.
#pragma once

#include <string>
#include <utility>

#include "common/http/message.hpp"

namespace rr::test {

inline http::Response plain_text(std::string body) {
  http::Response response;
  response.content_type = "text/plain";
  response.body = std::move(body);
  return response;
}

}  // namespace rr::test
