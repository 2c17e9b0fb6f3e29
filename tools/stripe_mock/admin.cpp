// The stand-in provider's /_mock/ endpoints, for tests and demos: counters, the charges and
// refunds made, fault knobs changed at run time, and a reset. No auth: it only ever listens on a test host.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <optional>

#include "common/config/environment.hpp"
#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "tools/stripe_mock/mock.hpp"
#include "tools/stripe_mock/stripe_errors.hpp"

namespace rr::stripe_mock {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void write_string(Writer& writer, const char* name, std::string_view value) {
  writer.Key(name);
  writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

http::Response json(const rapidjson::StringBuffer& buffer) {
  http::Response response;
  response.body.assign(buffer.GetString(), buffer.GetSize());
  return response;
}

http::Response bad_config(const std::string& message) { return stripe_error(400, "invalid_request_error", message); }

// Fault settings as text, whichever encoding the body used.
std::optional<std::vector<std::pair<std::string, std::string>>> config_fields(const http::Request& request,
                                                                              std::string& problem) {
  std::vector<std::pair<std::string, std::string>> fields;
  auto type = request.header("Content-Type").value_or("");
  if (!type.starts_with("application/json")) {
    if (!http::form_decode(request.body, fields)) {
      problem = "body is neither JSON nor valid form encoding";
      return std::nullopt;
    }
    return fields;
  }
  rapidjson::Document document;
  document.Parse(request.body.data(), request.body.size());
  if (document.HasParseError() || !document.IsObject()) {
    problem = "body must be a JSON object";
    return std::nullopt;
  }
  for (const auto& member : document.GetObject()) {
    std::string name(member.name.GetString(), member.name.GetStringLength());
    if (member.value.IsString()) {
      fields.emplace_back(name, std::string(member.value.GetString(), member.value.GetStringLength()));
    } else if (member.value.IsInt64()) {
      fields.emplace_back(name, std::to_string(member.value.GetInt64()));
    } else if (member.value.IsNumber()) {
      // Plain decimal notation, which the strict parsers below accept.
      char text[64];
      std::snprintf(text, sizeof text, "%.6f", member.value.GetDouble());
      fields.emplace_back(name, text);
    } else {
      problem = name + " must be a number";
      return std::nullopt;
    }
  }
  return fields;
}

}  // namespace

http::Response Mock::admin(const http::Request& request) {
  std::string endpoint = request.method + " " + request.path;
  if (endpoint == "GET /_mock/stats") return stats_json();
  if (endpoint == "GET /_mock/charges") return charges_json();
  if (endpoint == "GET /_mock/refunds") return refunds_json();
  if (endpoint == "GET /_mock/config") return faults_json();
  if (endpoint == "POST /_mock/config") return configure(request);
  if (endpoint == "POST /_mock/reset") {
    {
      std::lock_guard lock(mutex_);
      ledger_.clear();
      replays_.clear();
      stats_ = {};
      faults_ = initial_faults_;
      fault_random_.seed(fault_seed(seed_));
    }
    return faults_json();
  }
  return stripe_error(404, "invalid_request_error",
                      "Unrecognized request URL (" + request.method + ": " + request.path + ").");
}

http::Response Mock::stats_json() {
  rapidjson::StringBuffer buffer;
  Writer writer(buffer);
  std::lock_guard lock(mutex_);
  writer.StartObject();
  writer.Key("charges");
  writer.Int64(stats_.charges);
  writer.Key("refunds");
  writer.Int64(stats_.refunds);
  writer.Key("requests");
  writer.Int64(stats_.requests);
  writer.Key("replays");
  writer.Int64(stats_.replays);
  writer.Key("failures_injected");
  writer.Int64(stats_.failures_injected);
  writer.Key("drops_injected");
  writer.Int64(stats_.drops_injected);
  writer.Key("idempotency_keys");  // kept now
  writer.Int64(static_cast<std::int64_t>(replays_.size()));
  writer.Key("idempotency_keys_pruned");  // forgotten: 24 hours old, or beyond the bound
  writer.Int64(replays_.pruned());
  writer.EndObject();
  return json(buffer);
}

http::Response Mock::charges_json() {
  rapidjson::StringBuffer buffer;
  Writer writer(buffer);
  std::lock_guard lock(mutex_);
  writer.StartArray();
  for (std::size_t index = 0; index < ledger_.charge_count(); ++index) {
    const auto& charge = ledger_.charge(static_cast<ObjectIndex>(index));
    if (!charge.succeeded) continue;  // a declined charge moved no money
    writer.StartObject();
    write_string(writer, "id", ledger_.charge_id(charge));
    write_string(writer, "idempotency_key", charge.text.idempotency_key());
    write_string(writer, "customer", ledger_.payer_id(charge));
    writer.Key("amount");
    writer.Int64(charge.amount);
    write_string(writer, "currency", std::string_view(charge.currency.data(), charge.currency.size()));
    write_string(writer, "description", charge.text.description().value_or(""));
    writer.Key("amount_refunded");
    writer.Int64(charge.amount_refunded);
    writer.EndObject();
  }
  writer.EndArray();
  return json(buffer);
}

http::Response Mock::refunds_json() {
  rapidjson::StringBuffer buffer;
  Writer writer(buffer);
  std::lock_guard lock(mutex_);
  writer.StartArray();
  for (std::size_t index = 0; index < ledger_.refund_count(); ++index) {
    const auto& refund = ledger_.refund(static_cast<ObjectIndex>(index));
    const auto& charge = ledger_.charge(refund.charge);
    writer.StartObject();
    write_string(writer, "id", ledger_.refund_id(refund));
    write_string(writer, "idempotency_key", refund.text.idempotency_key());
    write_string(writer, "charge", ledger_.charge_id(charge));
    writer.Key("amount");
    writer.Int64(refund.amount);
    write_string(writer, "currency", std::string_view(charge.currency.data(), charge.currency.size()));
    write_string(writer, "reason", reason_name(refund.reason));
    writer.EndObject();
  }
  writer.EndArray();
  return json(buffer);
}

http::Response Mock::faults_json() {
  rapidjson::StringBuffer buffer;
  Writer writer(buffer);
  std::lock_guard lock(mutex_);
  writer.StartObject();
  writer.Key("failure_rate");
  writer.Double(faults_.failure_rate);
  writer.Key("latency_ms");
  writer.Int64(faults_.latency.count());
  writer.Key("drop_rate");
  writer.Double(faults_.drop_rate);
  writer.Key("fail_next");
  writer.Int64(faults_.fail_next);
  writer.Key("drop_next");
  writer.Int64(faults_.drop_next);
  writer.Key("hold");
  writer.Int(faults_.hold ? 1 : 0);
  writer.EndObject();
  return json(buffer);
}

http::Response Mock::configure(const http::Request& request) {
  std::string problem;
  auto fields = config_fields(request, problem);
  if (!fields) return bad_config(problem);
  Faults updated;
  {
    std::lock_guard lock(mutex_);
    updated = faults_;
  }
  // All or nothing: one bad field leaves every setting as it was.
  for (const auto& [name, value] : *fields) {
    if (name == "failure_rate" || name == "drop_rate") {
      auto rate = parse_rate(value);
      if (!rate) return bad_config(name + " must be a decimal between 0 and 1, got \"" + value + "\"");
      (name == "failure_rate" ? updated.failure_rate : updated.drop_rate) = *rate;
    } else if (name == "latency_ms") {
      auto latency = config::parse_integer(value);
      if (!latency || *latency < 0 || *latency > kMaxLatencyMs) {
        return bad_config("latency_ms must be a whole number between 0 and " + std::to_string(kMaxLatencyMs) +
                          ", got \"" + value + "\"");
      }
      updated.latency = std::chrono::milliseconds(*latency);
    } else if (name == "fail_next" || name == "drop_next") {
      auto count = config::parse_integer(value);
      if (!count || *count < 0 || *count > kMaxFaultCount) {
        return bad_config(name + " must be a whole number between 0 and " + std::to_string(kMaxFaultCount) +
                          ", got \"" + value + "\"");
      }
      (name == "fail_next" ? updated.fail_next : updated.drop_next) = *count;
    } else if (name == "hold") {
      if (value != "0" && value != "1") return bad_config("hold must be 0 or 1, got \"" + value + "\"");
      updated.hold = value == "1";
    } else {
      return bad_config("unknown setting " + name +
                        " (expected failure_rate, latency_ms, drop_rate, fail_next, drop_next or hold)");
    }
  }
  {
    std::lock_guard lock(mutex_);
    faults_ = updated;
  }
  return faults_json();
}

}  // namespace rr::stripe_mock
