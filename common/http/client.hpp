// A small blocking HTTP/1.1 client on Boost.Beast with one deadline for connect plus response;
// https:// verifies the server's certificate against the system store. Used for the payment
// provider and by tests.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rr::http {

struct ClientResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string header(std::string_view name) const;  // "" when absent; case-insensitive
};

// Every transport failure (DNS, refused, reset, TLS, timeout, malformed response).
class TransportError : public std::runtime_error {
 public:
  TransportError(std::string what, bool timed_out) : std::runtime_error(std::move(what)), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

struct ClientRequest {
  std::string method = "GET";
  std::string url;  // http://host:port/path?query or https://...
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{10000};
};

// One request on a fresh connection. Throws TransportError.
ClientResponse send(const ClientRequest& request);

// Percent-encodes for application/x-www-form-urlencoded.
std::string form_encode(const std::vector<std::pair<std::string, std::string>>& fields);
// Parses application/x-www-form-urlencoded; false on malformed percent-escapes.
bool form_decode(std::string_view body, std::vector<std::pair<std::string, std::string>>& out);

}  // namespace rr::http
