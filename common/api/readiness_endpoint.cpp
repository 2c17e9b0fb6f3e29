// Readiness from the drain flag and the readiness pinger, never from the request pool.
#include "common/api/readiness_endpoint.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>

#include "common/api/outcome_answers.hpp"

namespace rr::api {

namespace {

http::Response writes_closed_answer(const std::string& reason) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("status");
  writer.String("ready");
  writer.Key("writes");
  writer.String("closed until reconciliation has run");
  writer.Key("reason");
  writer.String(reason.data(), static_cast<rapidjson::SizeType>(reason.size()));
  writer.EndObject();
  return http::Response{200, "application/json", {}, std::string(buffer.GetString(), buffer.GetSize())};
}

}  // namespace

http::Response ReadinessEndpoint::handle(const http::Request&, const flows::PathArguments&) {
  if (draining_) return error_response(503, "api_error", "Not ready: the server is shutting down.");
  // Not the request pool's state: a busy API still serves, and a balancer that took every busy
  // API out of rotation would turn overload into an outage.
  if (!readiness_.database_reachable()) return error_response(503, "api_error", "Not ready: database unavailable.");
  // A write fence is the whole cluster's: taking every API out of the balancer for it would turn a
  // pause of writes into an outage of reads too, and clients would get the balancer's 503 without
  // the API's Retry-After. Ready, and saying that writes are closed and why.
  if (auto reason = fence_.closed_because()) return writes_closed_answer(*reason);
  return http::Response{200, "application/json", {}, "{\"status\":\"ready\"}"};
}

}  // namespace rr::api
