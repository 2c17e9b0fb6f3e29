// Charges and refunds through Stripe's HTTP API, and the classification of their outcomes: only an
// object's id or the provider's own refusal (a card error; a refund it will not make) is final;
// anything else means "unknown, retry later with the same key".
#include "common/payments/stripe_client.hpp"

#include <rapidjson/document.h>

#include <chrono>
#include <string>

#include "common/base/log.hpp"
#include "common/http/client.hpp"
#include "common/http/form.hpp"
#include "common/payments/provider_answer.hpp"

namespace rr::payments {

// What one POST got: either no answer (transport_error says why) or a status and what its body
// says (read_provider_answer).
struct StripeClient::Answer {
  bool arrived = false;
  std::string transport_error;
  bool timed_out = false;
  int status = 0;
  ProviderAnswerFields body;
  std::string raw_body;  // kept for a listing (GET) only

  bool success() const { return arrived && status >= 200 && status < 300; }
  // The provider's error message, falling back to a description of the status.
  std::string error_message() const {
    if (!body.message.empty()) return body.message;
    return "payment provider answered HTTP " + std::to_string(status);
  }
  std::string error_code() const { return body.code; }
  // The id of the object a 2xx created, or why there is none.
  std::string created_id(std::string& problem) const {
    if (body.id.empty()) {
      problem = body.json ? "payment provider answered without an id"
                          : "payment provider answered with a body that is not JSON";
    }
    return body.id;
  }
};

StripeClient::StripeClient(config::PaymentSettings settings)
    : settings_(std::move(settings)), http_(std::make_shared<http::Client>()) {
  if (settings_.development_provider_key_secret) {
    log::warn(
        "PROVIDER_KEY_SECRET is not set: provider idempotency keys derive from the public development secret "
        "(test mode only; production needs a secret of its own)",
        {{"development_secret", config::kDevelopmentProviderKeySecret}});
  }
}

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
  return send(std::move(http_request));
}

StripeClient::Answer StripeClient::send(http::ClientRequest http_request) const {
  http_request.timeout = settings_.timeout;
  Answer answer;
  http::ClientResponse response;
  try {
    response = http_->send(http_request);
  } catch (const http::TransportError& e) {
    answer.transport_error = e.what();
    answer.timed_out = e.timed_out();
    return answer;
  } catch (const std::exception& e) {
    answer.transport_error = e.what();
    return answer;
  }
  answer.arrived = true;
  answer.status = response.status;
  answer.body = read_provider_answer(response.body, answer.success() && http_request.method == "POST");
  if (http_request.method == "GET") answer.raw_body = std::move(response.body);
  return answer;
}

ChargeOutcome StripeClient::create_charge(const ChargeRequest& request) const {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"amount", std::to_string(request.amount)},
      {"currency", request.currency},
      {"customer", request.customer},
  };
  if (!request.description.empty()) fields.emplace_back("description", request.description);
  for (const auto& [name, value] : request.metadata) fields.emplace_back("metadata[" + name + "]", value);
  auto answer = post_form("/v1/charges", fields, request.idempotency_key);

  ChargeOutcome outcome;
  if (!answer.arrived) {
    outcome.message = answer.transport_error;
    outcome.timed_out = answer.timed_out;
    return outcome;
  }
  outcome.http_status = answer.status;
  if (answer.success()) {
    // Without its id the charge may exist but we cannot know: unavailable, retry with the same key.
    outcome.charge_id = answer.created_id(outcome.message);
    if (!outcome.charge_id.empty()) outcome.kind = ChargeOutcome::Kind::charged;
    return outcome;
  }
  if (answer.status == 402) outcome.kind = ChargeOutcome::Kind::card_declined;
  if (answer.status == 400 && answer.body.type == "idempotency_error") outcome.kind = ChargeOutcome::Kind::key_reused;
  outcome.message = answer.error_message();
  return outcome;
}

RefundOutcome StripeClient::create_refund(const RefundRequest& request) const {
  std::vector<std::pair<std::string, std::string>> fields = {{"charge", request.charge}};
  if (request.amount) fields.emplace_back("amount", std::to_string(*request.amount));
  if (!request.reason.empty()) fields.emplace_back("reason", request.reason);
  for (const auto& [name, value] : request.metadata) fields.emplace_back("metadata[" + name + "]", value);
  auto answer = post_form("/v1/refunds", fields, request.idempotency_key);

  RefundOutcome outcome;
  if (!answer.arrived) {
    outcome.message = answer.transport_error;
    outcome.timed_out = answer.timed_out;
    return outcome;
  }
  outcome.http_status = answer.status;
  if (answer.success()) {
    outcome.refund_id = answer.created_id(outcome.message);
    if (!outcome.refund_id.empty()) outcome.kind = RefundOutcome::Kind::refunded;
    return outcome;
  }
  // Stripe's answers about the refund itself (already refunded, no such charge, too much) are
  // final; a bad key, a rate limit or a 5xx say nothing about it.
  if (answer.status == 400 || answer.status == 404) {
    outcome.kind = RefundOutcome::Kind::refused;
    outcome.error_code = answer.error_code();
  }
  outcome.message = answer.error_message();
  return outcome;
}

namespace {

// A listed object's metadata holds every wanted pair.
bool holds(const rapidjson::Value& object, const Metadata& wanted) {
  auto metadata = object.FindMember("metadata");
  if (metadata == object.MemberEnd() || !metadata->value.IsObject()) return false;
  for (const auto& [name, value] : wanted) {
    auto member = metadata->value.FindMember(name.c_str());
    if (member == metadata->value.MemberEnd() || !member->value.IsString() || member->value.GetString() != value) {
      return false;
    }
  }
  return true;
}

// Pages a list of Stripe's may take here: the window's charges of one customer are few, and a
// bound keeps a provider that always says has_more from holding the request.
constexpr int kMaxListPages = 20;
constexpr std::int64_t kProviderKeyWindowSeconds = 24 * 60 * 60;

}  // namespace

FoundCharge StripeClient::find_charge(const std::string& customer, const Metadata& wanted) const {
  FoundCharge result;
  auto since =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() -
      kProviderKeyWindowSeconds;
  std::string after;
  for (int page = 0; page < kMaxListPages; ++page) {
    std::vector<std::pair<std::string, std::string>> query = {
        {"customer", customer}, {"created[gte]", std::to_string(since)}, {"limit", "100"}};
    if (!after.empty()) query.emplace_back("starting_after", after);
    http::ClientRequest request;
    request.url = settings_.api_base + "/v1/charges?" + http::form_encode(query);
    request.headers = {{"Authorization", "Bearer " + settings_.api_key}, {"Accept", "application/json"}};
    auto answer = send(std::move(request));
    if (!answer.success()) {
      result.message = answer.arrived ? answer.error_message() : answer.transport_error;
      return result;
    }
    rapidjson::Document list;
    list.Parse(answer.raw_body.data(), answer.raw_body.size());
    auto data = list.IsObject() ? list.FindMember("data") : rapidjson::Value::MemberIterator{};
    if (!list.IsObject() || data == list.MemberEnd() || !data->value.IsArray()) {
      result.message = "payment provider listed charges in a body that is not a list";
      return result;
    }
    for (const auto& charge : data->value.GetArray()) {
      if (!charge.IsObject() || !charge.HasMember("id") || !charge["id"].IsString()) continue;
      after = charge["id"].GetString();
      if (!holds(charge, wanted)) continue;
      result.kind = FoundCharge::Kind::found;
      result.charge_id = after;
      result.succeeded = charge.HasMember("status") && charge["status"].IsString() &&
                         std::string_view(charge["status"].GetString()) == "succeeded";
      return result;
    }
    auto more = list.FindMember("has_more");
    if (more == list.MemberEnd() || !more->value.IsBool() || !more->value.GetBool() || after.empty()) {
      result.kind = FoundCharge::Kind::absent;
      return result;
    }
  }
  result.message = "payment provider listed more than " + std::to_string(kMaxListPages) + " pages of charges";
  return result;
}

}  // namespace rr::payments
