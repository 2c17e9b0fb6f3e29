// Plain HTTP request/response values: handlers are pure functions of these, testable without a
// socket, and nothing outside common/http/ needs Beast's headers.
#pragma once

#include <any>
#include <chrono>
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
  // Set when the handler deferred this request (Response::deferral) and the server runs it again:
  // the deadline of that first deferral, so a re-run that must wait again waits only what is left.
  std::optional<std::chrono::steady_clock::time_point> wait_deadline;
  // Set with wait_deadline: what the handler's wait holds for the request (Deferral::wait_place),
  // kept from its first deferral until it is answered, so a re-run that must wait again waits in
  // it. Its type is the handler's business (the API: its place among its user's key waiters).
  std::any wait_place;

  // Case-insensitive lookup of the first header with this name.
  std::optional<std::string_view> header(std::string_view name) const;
  // True when the same header name appears more than once.
  bool has_repeated_header(std::string_view name) const;
};

struct Response;

// What a deferred request's owner (e.g. a registry of requests waiting for a key) does with it,
// from any thread. Each continuation acts once: the first of answer(), run_again() or its
// destruction wins, the rest do nothing; after Server::stop they all do nothing.
class Continuation {
 public:
  virtual ~Continuation() = default;
  // Writes `response` as the request's answer, as it is (no handler sees it).
  virtual void answer(Response response) = 0;
  // Hands the same request (its admission and wait place kept, Request::wait_deadline set) to the
  // worker lane again, or answers 503 when the lane's queue is full.
  virtual void run_again() = 0;
};

// A handler's "not yet": the server keeps the request, holding no thread, and hands `park` (on the
// worker thread that returned it) the continuation that ends the wait. Until then the request counts
// as in flight (wait_idle, graceful stop) and its connection is not evicted.
struct Deferral {
  std::chrono::steady_clock::time_point deadline;  // becomes Request::wait_deadline on a re-run
  std::function<void(std::shared_ptr<Continuation>)> park;
  // What the handler took for the request and the request keeps while parked and on its re-run
  // (becomes Request::admission when the request has none): a place the triage did not take,
  // such as the in-flight slot of a user known only on a worker.
  std::shared_ptr<const void> admission = nullptr;
  // The place the request's wait takes in whatever it waits in, when it has one: becomes
  // Request::wait_place, held until the request is answered, through every re-run and
  // deferral in between.
  std::any wait_place = {};
};

// `response`, when it is a deferral, with `admission` kept by the parked request
// (Deferral::admission). Anything else as it is.
Response keeping_while_parked(Response response, std::shared_ptr<const void> admission);

struct Response {
  Response() = default;
  Response(int status_code, std::string type, Headers extra_headers, std::string text)
      : status(status_code), content_type(std::move(type)), headers(std::move(extra_headers)), body(std::move(text)) {}

  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::string body;
  // Set: not an answer but a deferral (see Deferral); status, headers and body are ignored.
  std::shared_ptr<const Deferral> deferral;

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
