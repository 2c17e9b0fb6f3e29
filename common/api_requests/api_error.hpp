// A client-facing error: thrown anywhere in request handling, turned into a response in one place.
#pragma once

#include <stdexcept>
#include <string>

namespace rr::api {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, int retry_after_seconds = 0)
      : std::runtime_error(message), status(status), type(std::move(type)), retry_after_seconds(retry_after_seconds) {}
  int status;
  std::string type;  // invalid_request_error, authentication_error, idempotency_error, card_error, api_error
  int retry_after_seconds;
};

}  // namespace rr::api
