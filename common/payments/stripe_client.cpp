// One charge through Stripe's HTTP API, and the classification of its outcome: only a charge id
// (charged) or a card error (declined) is final; anything else means "unknown, retry later".
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

// The provider's error message, falling back to a description of the status.
std::string error_message(const rapidjson::Document& body, bool parsed, int status) {
  if (parsed && body.IsObject()) {
    auto error = body.FindMember("error");
    if (error != body.MemberEnd()) {
      auto message = string_member(error->value, "message");
      if (!message.empty()) return message;
    }
  }
  return "payment provider answered HTTP " + std::to_string(status);
}

}  // namespace

ChargeOutcome StripeClient::create_charge(const ChargeRequest& request) const {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"amount", std::to_string(request.amount)},
      {"currency", request.currency},
      {"customer", request.customer},
  };
  if (!request.description.empty()) fields.emplace_back("description", request.description);

  http::ClientRequest http_request;
  http_request.method = "POST";
  http_request.url = settings_.api_base + "/v1/charges";
  http_request.headers = {
      {"Authorization", "Bearer " + settings_.api_key},
      {"Content-Type", "application/x-www-form-urlencoded"},
      {"Accept", "application/json"},
  };
  if (!request.idempotency_key.empty()) http_request.headers.emplace_back("Idempotency-Key", request.idempotency_key);
  http_request.body = http::form_encode(fields);
  http_request.timeout = settings_.timeout;

  ChargeOutcome outcome;
  http::ClientResponse response;
  try {
    response = http_->send(http_request);
  } catch (const http::TransportError& e) {
    outcome.message = e.what();
    outcome.timed_out = e.timed_out();
    return outcome;
  } catch (const std::exception& e) {
    outcome.message = e.what();
    return outcome;
  }

  outcome.http_status = response.status;
  rapidjson::Document body;
  body.Parse(response.body.data(), response.body.size());
  bool parsed = !body.HasParseError();

  if (response.status >= 200 && response.status < 300) {
    std::string id = parsed ? string_member(body, "id") : "";
    if (id.empty()) {
      // The charge may exist, but without its id we cannot know: retry with the same key.
      outcome.message = parsed ? "payment provider answered without a charge id"
                               : "payment provider answered with a body that is not JSON";
      return outcome;
    }
    outcome.kind = ChargeOutcome::Kind::charged;
    outcome.charge_id = std::move(id);
    return outcome;
  }
  if (response.status == 402) {
    outcome.kind = ChargeOutcome::Kind::card_declined;
    outcome.message = error_message(body, parsed, response.status);
    return outcome;
  }
  outcome.message = error_message(body, parsed, response.status);
  return outcome;
}

}  // namespace rr::payments
