// Charges and refunds through Stripe's HTTP API, and the classification of their outcomes: only an
// object id, or an error Stripe documents as final, is final; anything else means "unknown, retry
// later".
#include "common/payments/stripe_client.hpp"

#include <rapidjson/document.h>

#include <string>

#include "common/http/client.hpp"

namespace rr::payments {
namespace {

// A string member of a JSON object, or "" when absent or not a string.
std::string string_member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return "";
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsString()) return "";
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

// A member of the body's error object, or "".
std::string error_member(const rapidjson::Document& body, bool parsed, const char* name) {
  if (!parsed || !body.IsObject()) return "";
  auto error = body.FindMember("error");
  if (error == body.MemberEnd()) return "";
  return string_member(error->value, name);
}

}  // namespace

struct StripeClient::Answer {
  bool arrived = false;  // false: no response (message and timed_out say why)
  int status = 0;
  rapidjson::Document body;
  bool parsed = false;
  bool timed_out = false;
  std::string message;  // the transport error, or the provider's message (falling back to the status)

  // The object's id from a 2xx, or "" with `message` saying why there is none.
  std::string object_id(const char* what) {
    std::string id = parsed ? string_member(body, "id") : "";
    if (id.empty()) {
      // The object may exist, but without its id we cannot know: retry with the same key.
      message = parsed ? std::string("payment provider answered without a ") + what + " id"
                       : "payment provider answered with a body that is not JSON";
    }
    return id;
  }
  std::string error_code() const { return error_member(body, parsed, "code"); }
};

StripeClient::Answer StripeClient::post_form(const std::string& path,
                                             const std::vector<std::pair<std::string, std::string>>& fields,
                                             const std::string& idempotency_key) const {
  http::ClientRequest http_request;
  http_request.method = "POST";
  http_request.url = settings_.api_base + path;
  http_request.headers = {
      {"Authorization", "Bearer " + settings_.api_key},
      {"Content-Type", "application/x-www-form-urlencoded"},
      {"Accept", "application/json"},
  };
  if (!idempotency_key.empty()) http_request.headers.emplace_back("Idempotency-Key", idempotency_key);
  http_request.body = http::form_encode(fields);
  http_request.timeout = settings_.timeout;

  Answer answer;
  http::ClientResponse response;
  try {
    response = http_->send(http_request);
  } catch (const http::TransportError& e) {
    answer.message = e.what();
    answer.timed_out = e.timed_out();
    return answer;
  } catch (const std::exception& e) {
    answer.message = e.what();
    return answer;
  }
  answer.arrived = true;
  answer.status = response.status;
  answer.body.Parse(response.body.data(), response.body.size());
  answer.parsed = !answer.body.HasParseError();
  answer.message = error_member(answer.body, answer.parsed, "message");
  if (answer.message.empty()) answer.message = "payment provider answered HTTP " + std::to_string(response.status);
  return answer;
}

ChargeOutcome StripeClient::create_charge(const ChargeRequest& request) const {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"amount", std::to_string(request.amount)},
      {"currency", request.currency},
      {"customer", request.customer},
  };
  if (!request.description.empty()) fields.emplace_back("description", request.description);
  auto answer = post_form("/v1/charges", fields, request.idempotency_key);

  ChargeOutcome outcome;
  outcome.http_status = answer.status;
  outcome.timed_out = answer.timed_out;
  if (answer.arrived && answer.status >= 200 && answer.status < 300) {
    outcome.charge_id = answer.object_id("charge");
    if (!outcome.charge_id.empty()) outcome.kind = ChargeOutcome::Kind::charged;
  } else if (answer.status == 402) {
    outcome.kind = ChargeOutcome::Kind::card_declined;
  }
  outcome.message = std::move(answer.message);
  return outcome;
}

RefundOutcome StripeClient::create_refund(const RefundRequest& request) const {
  std::vector<std::pair<std::string, std::string>> fields = {{"charge", request.charge}};
  if (request.amount) fields.emplace_back("amount", std::to_string(*request.amount));
  for (const auto& [name, value] : request.metadata) fields.emplace_back("metadata[" + name + "]", value);
  auto answer = post_form("/v1/refunds", fields, request.idempotency_key);

  RefundOutcome outcome;
  outcome.http_status = answer.status;
  outcome.timed_out = answer.timed_out;
  if (answer.arrived && answer.status >= 200 && answer.status < 300) {
    outcome.refund_id = answer.object_id("refund");
    if (!outcome.refund_id.empty()) outcome.kind = RefundOutcome::Kind::refunded;
  } else if (answer.status == 400 && answer.error_code() == "charge_already_refunded") {
    outcome.kind = RefundOutcome::Kind::already_refunded;
  } else if (answer.status == 404 && answer.error_code() == "resource_missing") {
    outcome.kind = RefundOutcome::Kind::no_such_charge;
  }
  outcome.message = std::move(answer.message);
  return outcome;
}

}  // namespace rr::payments
