// Plain HTTP request/response values: handlers are pure functions of these, testable without a
// socket, and nothing outside common/http/ needs Beast's headers.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rr::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Case-insensitive lookup of the first header with this name in a header list.
std::optional<std::string_view> find_header(const Headers& headers, std::string_view name);

struct Request {
  std::string method;                                        // "GET", "POST", ... as sent
  std::string target;                                        // the raw request target, e.g. "/rides?limit=5"
  std::string path;                                          // target up to '?'
  std::string query;                                         // after '?', without it ("" when none)
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent
  std::string body;
  std::string remote_address;  // peer IP, e.g. "127.0.0.1"
  // Whatever the I/O thread's triage took for this request and the handler must not take again
  // (the API: its user's in-flight slot). Released with the request, when the handler is done.
  std::shared_ptr<const void> admission;

  // Case-insensitive lookup of the first header with this name.
  std::optional<std::string_view> header(std::string_view name) const;
  // True when the same header name appears more than once.
  bool has_repeated_header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::string body;

  // Case-insensitive lookup of the first header with this name.
  std::optional<std::string_view> header(std::string_view name) const { return find_header(headers, name); }

  Response& with_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

// Runs on a worker thread, never on an I/O thread: it may block on the database or the provider.
using Handler = std::function<Response(const Request&)>;
// Optional, tried first on the I/O thread for answers that need nothing but memory: it must never
// block. nullopt hands the request to the worker pool and its Handler as usual. Saves the two
// thread hand-offs a worker costs when the answer is already known.
using InMemoryHandler = std::function<std::optional<Response>(const Request&)>;

bool iequals(std::string_view a, std::string_view b);

}  // namespace rr::http
