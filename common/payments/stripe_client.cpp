// Charges and refunds through Stripe's HTTP API, and the classification of their outcomes: only an
// object's id or the provider's own refusal (a card error; a refund it will not make) is final;
// anything else means "unknown, retry later with the same key".
#include "common/payments/stripe_client.hpp"

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
  answer.body = read_provider_answer(response.body, answer.success());
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
  outcome.message = answer.error_message();
  return outcome;
}

RefundOutcome StripeClient::create_refund(const RefundRequest& request) const {
  std::vector<std::pair<std::string, std::string>> fields = {{"charge", request.charge}};
  if (request.amount) fields.emplace_back("amount", std::to_string(*request.amount));
  if (!request.reason.empty()) fields.emplace_back("reason", request.reason);
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

}  // namespace rr::payments
