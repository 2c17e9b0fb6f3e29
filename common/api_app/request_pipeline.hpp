// The API as a function from request to response: a router over the route table (routes.hpp) and
// the error boundary around its endpoints, with the per-user in-flight limit, request ids, request
// metrics and the access log. The HTTP server only does I/O around it. It owns one endpoint per
// route, built from the collaborators it is given, and uses nothing else of the services but the
// authenticator (whose user a request is) and the per-user limit.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/api/authenticator.hpp"
#include "common/api/endpoint.hpp"
#include "common/api/in_flight_per_user.hpp"
#include "common/api_app/routes.hpp"
#include "common/http/dispatch.hpp"
#include "common/http/message.hpp"

namespace rr::api {

class RequestPipeline {
 public:
  RequestPipeline(const Collaborators& with, Authenticator& authenticator, InFlightPerUser& in_flight);

  // Never throws: every failure becomes a response here (the error boundary, failure_answer).
  http::Response handle(const http::Request& request);
  // The answers the I/O thread could give from memory for a request that needs a worker (a replay
  // of a key this process saw finish, a validation error); nullopt sends the request on to
  // handle(). Never blocks, never throws.
  std::optional<http::Response> handle_in_memory(const http::Request& request);
  // The server's triage on the I/O thread (triage.cpp): answers what needs no database (/healthz,
  // 401 for a missing or malformed token, 404, 405, validation errors, replays from memory, 429
  // for a user at API_MAX_IN_FLIGHT_PER_USER) and sends each other request to its route's lane.
  // A request of a user known from the token cache takes its in-flight slot here
  // (Request::admission). Never blocks, never throws.
  http::Dispatch dispatch(http::Request& request);

 private:
  // The endpoint's answer, or the 404 or 405 when no route serves the request.
  http::Response route(const http::Request& request, const RouteLookup& lookup);
  // The answers that need no database, in the order the contract gives them; nullopt when the
  // request needs its endpoint's handle(). Takes the request's in-flight slot into `admission`
  // when its user is known from the token cache.
  std::optional<http::Response> answer_without_database(const http::Request& request, const RouteLookup& lookup,
                                                        std::shared_ptr<const void>& admission);
  // A slot for one more of this user's requests, or the 429 that refuses it.
  std::variant<std::shared_ptr<const InFlightPerUser::Slot>, http::Response> admit(std::int64_t user_id);
  // Names the request's Idempotency-Key on an answer made outside its endpoint.
  void name_the_key(const http::Request& request, const RouteLookup& lookup, http::Response& response);
  http::Response finish(const http::Request& request, const RouteLookup& lookup, http::Response response,
                        std::string request_id, std::chrono::steady_clock::time_point started);

  Authenticator& authenticator_;
  InFlightPerUser& in_flight_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;  // one per route, in all_routes() order
};

}  // namespace rr::api
